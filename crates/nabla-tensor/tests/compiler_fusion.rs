//! Elementwise fusion and buffer reuse in `GraphCompiler`: where fusion must fire and where it must
//! not, compiled programs giving the original's outputs on two input sets, and the buffer-reuse plan
//! lowering peak memory without ever overwriting a program input or output.

use nabla_core::{DType, MemoryTracked, Primitive, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphCompiler, GraphExecutor, Pass, Program, Tensor, TraceOp, TracingBackend};

use crate::compiler_support;

use compiler_support::{check_equivalent, inputs};

fn ops(program: &Program) -> Vec<String> {
    program.nodes().iter().map(|n| n.op.to_string()).collect()
}

fn fusion() -> GraphCompiler {
    GraphCompiler::new().only(&[Pass::Fusion])
}

#[test]
fn a_chain_becomes_one_fused_node() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([64, 33], DType::F32)?;
    let b = tb.placeholder([64, 33], DType::F32)?;
    let c = tb.placeholder([64, 33], DType::F32)?;
    let y = ((&a * &b)? + 1.0)?.tanh()?.mul(&c)?;
    let program = tb.program(&[&y])?;
    let compiled = fusion().compile(&program)?;
    assert_eq!(
        ops(&compiled),
        [
            "input 0",
            "input 1",
            "input 2",
            "fused[tanh(in0 * in1 + 1) * in2]"
        ]
    );
    assert!(
        compiled
            .to_string()
            .contains("%3: f32[64,33] = fused[tanh(in0 * in1 + 1) * in2] %0, %1, %2\n"),
        "{compiled}"
    );
    check_equivalent(&program, &compiled, 0.0);
    // The whole pipeline agrees; compiling a compiled program again changes nothing.
    let full = GraphCompiler::new().compile(&program)?;
    assert_eq!(ops(&full), ops(&compiled));
    let again = GraphCompiler::new().compile(&full)?;
    assert_eq!(again.nodes(), full.nodes());
    Ok(())
}

#[test]
fn broadcast_and_transposed_inputs_are_read_through_their_views() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([40, 30], DType::F64)?;
    let bias = tb.placeholder([30], DType::F64)?;
    let m = tb.placeholder([30, 40], DType::F64)?;
    let y = ((&a * &bias)? + m.t()?)?.sigmoid()?.sub(2.5)?.abs()?;
    let program = tb.program(&[&y])?;
    let compiled = fusion().compile(&program)?;
    let text = compiled.to_string();
    assert_eq!(compiled.nodes().len(), 4, "{text}");
    assert!(
        text.contains("fused[abs(sigmoid(in0 * in1 + in2) - 2.5)] %0, %1[view 40x30 strides(0,1)], %2[view 40x30 strides(1,40)]"),
        "{text}"
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn fusion_stops_at_a_value_with_two_readers() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([10, 7], DType::F32)?;
    let b = tb.placeholder([10, 7], DType::F32)?;
    let h = (&a * &b)?;
    let y = (h.tanh()? + &h)?.exp()?;
    let program = tb.program(&[&y])?;
    let compiled = fusion().compile(&program)?;
    // `h` is computed once; its two readers are fused, reading it as one input.
    assert_eq!(
        ops(&compiled),
        ["input 0", "input 1", "mul", "fused[exp(tanh(in0) + in0)]"]
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn fusion_stops_at_a_program_output() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([5, 6], DType::F64)?;
    let h = a.exp()?.neg()?;
    let y = (&h * 3.0)?.sin()?;
    let program = tb.program(&[&y, &h])?;
    let compiled = fusion().compile(&program)?;
    assert_eq!(
        ops(&compiled),
        ["input 0", "fused[-exp(in0)]", "fused[sin(in0 * 3)]"]
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn fusion_stops_at_a_matmul_and_at_a_partial_view() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([8, 5], DType::F64)?;
    let b = tb.placeholder([5, 8], DType::F64)?;
    let h = a.exp()?.square()?.matmul(&b)?;
    let y = (h.tanh()? + 1.0)?;
    // The transposed read of `t` and the half read of `s` are not whole-buffer reads: no fusion there.
    let t = y.cos()?;
    let z = (t.t()?.sin()? * 2.0)?;
    let s = y.log1p()?;
    let w = s.narrow(1, 0, 4)?.sqrt()?;
    let program = tb.program(&[&z, &w])?;
    let compiled = fusion().compile(&program)?;
    assert_eq!(
        ops(&compiled),
        [
            "input 0",
            "input 1",
            "fused[square(exp(in0))]",
            "matmul",
            "fused[tanh(in0) + 1]",
            "cos",
            "fused[sin(in0) * 2]",
            "fused[log1p(in0)]", // the last reader of `y` overwrites it
            "sqrt",
        ]
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

/// Comparisons, select, casts, broadcasts, reductions and view outputs in one program.
fn mixed(tb: &TracingBackend) -> Result<Vec<Tensor<TracingBackend>>> {
    let x = tb.placeholder([16, 12], DType::F64)?;
    let w = tb.placeholder([12, 12], DType::F64)?;
    let v = tb.placeholder([12], DType::F32)?;
    let h = x.matmul(&w)?;
    let gate = h.gt(0.1)?;
    let act = gate.where_(&h, (h.exp()? - 1.0)?)?; // an ELU-like activation
    let scaled = (act.cast(DType::F32)? * &v)?.cast(DType::F64)?;
    let norm = (&scaled / (scaled.abs()?.sum(&[1], true)? + 1.0)?)?;
    let out = (norm.tanh()? * 0.5)?.maximum(-0.25)?;
    let mask = out.ge(0.0)?.logical_and(gate.logical_not()?)?;
    Ok(vec![out.t()?, mask, (out.square()? + h.sin()?)?])
}

#[test]
fn compiled_programs_match_uncompiled_ones() -> Result<()> {
    let tb = TracingBackend::new();
    let outs = mixed(&tb)?;
    let program = tb.program(&outs.iter().collect::<Vec<_>>())?;
    let compiled = GraphCompiler::new().compile(&program)?;
    let fused = compiled
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, TraceOp::Primitive(Primitive::Fused { .. })))
        .count();
    assert!(fused >= 3, "{compiled}");
    assert!(compiled.nodes().len() < program.nodes().len());
    check_equivalent(&program, &compiled, 1e-12);
    let without_reuse = GraphCompiler::new()
        .without(Pass::BufferReuse)
        .compile(&program)?;
    assert!((0..without_reuse.nodes().len()).all(|i| without_reuse.reused_operand(i).is_none()));
    assert!(!without_reuse.to_string().contains("reuses"));
    check_equivalent(&program, &without_reuse, 1e-12);
    Ok(())
}

/// `x` broadcast to `[rows, 1000]`, then `steps` rounds of `tanh(h * h)`: `h` has two reader operands,
/// so each round is a fused node whose input is dead afterwards.
fn squaring_chain(rows: usize, steps: usize) -> Result<Program> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([1000], DType::F64)?;
    let mut h = x.broadcast_to([rows, 1000])?.exp()?;
    for _ in 0..steps {
        h = (&h * &h)?.tanh()?;
    }
    tb.program(&[&h])
}

#[test]
fn buffer_reuse_lowers_the_peak_of_a_long_chain() -> Result<()> {
    let program = squaring_chain(64, 12)?;
    let compiled = GraphCompiler::new().compile(&program)?;
    let unplanned = GraphCompiler::new()
        .without(Pass::BufferReuse)
        .compile(&program)?;
    let text = compiled.to_string();
    assert_eq!(text.matches("(reuses %").count(), 12, "{text}");
    assert!(
        text.contains("= fused[tanh(in0 * in0)] %1 (reuses %1)\n"),
        "{text}"
    );
    check_equivalent(&program, &compiled, 0.0);

    let n_bytes = 64 * 1000 * 8;
    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    let xs = inputs(&program, &cpu, 3);
    exec.run(&program, &xs)?;
    let original_peak = exec.last_run_stats().unwrap().peak_buffer_bytes;
    exec.run(&unplanned, &xs)?;
    let unplanned_peak = exec.last_run_stats().unwrap().peak_buffer_bytes;
    exec.run(&compiled, &xs)?;
    let compiled_peak = exec.last_run_stats().unwrap().peak_buffer_bytes;
    assert_eq!(original_peak, 2 * n_bytes);
    assert_eq!(unplanned_peak, 2 * n_bytes);
    assert_eq!(compiled_peak, n_bytes + 8000);
    assert_eq!(compiled_peak, compiled.planned_peak_bytes());

    // On a memory-tracking CPU backend the buffers really are reused: fewer allocations, lower peak.
    let mut measured = Vec::new();
    for p in [&unplanned, &compiled] {
        let tracked = MemoryTracked::new(CpuBackend::new());
        let xs = inputs(p, &tracked, 3);
        tracked.reset_peak();
        let before = tracked.stats();
        let out = GraphExecutor::new(&tracked).run(p, &xs)?;
        let after = tracked.stats();
        drop(out);
        measured.push((after.allocations - before.allocations, after.peak_bytes));
    }
    assert_eq!(measured[0].0, 13, "exp and 12 rounds each allocate");
    assert_eq!(
        measured[1].0, 1,
        "only exp allocates: every round overwrites its input"
    );
    assert!(measured[1].1 + n_bytes / 2 < measured[0].1, "{measured:?}");
    Ok(())
}

#[test]
fn lone_elementwise_nodes_become_fused_only_to_reuse_a_buffer() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([6, 6], DType::F32)?;
    let b = tb.placeholder([6, 6], DType::F32)?;
    let m = a.matmul(&b)?;
    let y = m.relu()?; // reads the matmul result, dead afterwards: overwritten in place
    let z = a.exp()?; // reads a program input: stays an ordinary node
    let program = tb.program(&[&y, &z])?;
    let compiled = GraphCompiler::new().compile(&program)?;
    let text = compiled.to_string();
    assert!(text.contains("(reuses %2)"), "{text}");
    assert!(text.contains("= exp %0\n"), "{text}");
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}

#[test]
fn constants_are_inlined_and_their_nodes_dropped() -> Result<()> {
    let tb = TracingBackend::new();
    let a = tb.placeholder([3, 4], DType::F64)?;
    let y = ((&a * 2.0)? + 0.5)?.maximum(0.0)?;
    let program = tb.program(&[&y])?;
    assert!(ops(&program).iter().any(|o| o.starts_with("full")));
    let compiled = fusion().compile(&program)?;
    assert_eq!(
        ops(&compiled),
        ["input 0", "fused[maximum(in0 * 2 + 0.5, 0)]"]
    );
    check_equivalent(&program, &compiled, 0.0);
    Ok(())
}
