//! The two kernel templates every op is generated from, and their parameter words.
//!
//! - **map**: one invocation per output element `i` (256 per workgroup, the grid split in 2-D so no
//!   dimension exceeds the adapter's limit), running an op-specific body.
//! - **fold**: one output `o` per invocation (short folds) or per workgroup (long folds: the workgroup's
//!   invocations stride over the terms and combine them in a shared-memory tree), folding `inner` terms
//!   `term(o, k)` with an associative `combine`.
//!
//! Views reach shaders as descriptors in the parameter words: `[rank, offset, shape.., strides..]`;
//! `view_off(p, i)` maps a row-major logical index to a buffer offset.

use crate::WgpuBackend;
use crate::context::Dispatch;
use crate::storage::{WgpuStorage, check_dtype, words_per};
use crate::wgsl;
use nabla_core::{DType, Error, Layout, Result};

/// Invocations per workgroup in every 1-D template.
pub(crate) const WG: usize = 256;
/// Folds with at least this many terms use a workgroup per output.
const WG_FOLD: usize = 64;

/// Parameter words of one dispatch (`prm` in the shader).
#[derive(Clone, Debug, Default)]
pub(crate) struct Params {
    pub words: Vec<u32>,
}

impl Params {
    /// Parameters starting with `head` (counts the template reads at fixed positions).
    pub fn new(head: &[u32]) -> Params {
        Params {
            words: head.to_vec(),
        }
    }

    /// Appends a word; returns its position.
    pub fn push(&mut self, w: u32) -> usize {
        self.words.push(w);
        self.words.len() - 1
    }

    /// Appends a signed word (two's complement).
    pub fn push_i(&mut self, v: isize) -> usize {
        self.push(v as i32 as u32)
    }

    /// Appends a view descriptor; returns its position.
    pub fn view(&mut self, l: &Layout) -> usize {
        let p = self.push(l.rank() as u32);
        self.push(l.offset() as u32);
        for &d in l.shape() {
            self.push(d as u32);
        }
        for &s in l.strides() {
            self.push_i(s);
        }
        p
    }
}

/// The offset expression of logical index `i` in the view whose descriptor is at `p`.
pub(crate) fn view_expr(l: &Layout, p: usize, i: &str) -> String {
    if l.is_contiguous() {
        format!("(prm[{}u] + {i})", p + 1)
    } else {
        format!("view_off({p}u, {i})")
    }
}

/// WGSL statements binding `c0..c{rank}` to the coordinates of row-major index `i` in the shape stored
/// at parameter word `q`.
pub(crate) fn unravel(q: usize, rank: usize, i: &str) -> String {
    let mut s = format!("var rem = {i};\n");
    for d in (0..rank).rev() {
        s += &format!(
            "let c{d} = rem % prm[{}u];\nrem = rem / prm[{}u];\n",
            q + d,
            q + d
        );
    }
    s
}

/// The offset of coordinates `coords` in the view with descriptor at `p`.
pub(crate) fn at(p: usize, rank: usize, coords: &[String]) -> String {
    let mut s = format!("u32(bitcast<i32>(prm[{}u])", p + 1);
    for (d, c) in coords.iter().enumerate() {
        s += &format!(" + i32({c}) * bitcast<i32>(prm[{}u])", p + 2 + rank + d);
    }
    s + ")"
}

/// The coordinate names `c0..c{rank}`.
pub(crate) fn coords(rank: usize) -> Vec<String> {
    (0..rank).map(|d| format!("c{d}")).collect()
}

/// Checks that every element count and offset fits the shaders' 32-bit index arithmetic.
pub(crate) fn check_len(op: &'static str, n: usize) -> Result<()> {
    if n > i32::MAX as usize {
        return Err(Error::invalid(
            op,
            format!("{n} elements exceed the wgpu backend's 2^31 - 1 element limit"),
        ));
    }
    Ok(())
}

/// How a fold combines its terms.
pub(crate) struct Fold<'a> {
    /// WGSL type of the accumulator.
    pub ty: &'a str,
    /// The identity of `combine`.
    pub identity: String,
    /// `combine(a, b)` as an expression.
    pub combine: &'a dyn Fn(&str, &str) -> String,
    /// Statements ending in `term` being defined, from `o` (output) and `k` (term index).
    pub term: String,
    /// Statements storing `res` as output `o`.
    pub store: String,
}

impl WgpuBackend {
    /// A new output buffer of `len` elements of `dtype`.
    pub(crate) fn out(&self, op: &'static str, dtype: DType, len: usize) -> Result<WgpuStorage> {
        check_dtype(op, dtype)?;
        check_len(op, len)?;
        let buffer = self.ctx.alloc(op, len.max(1) * words_per(dtype))?;
        Ok(WgpuStorage::new(&self.ctx, buffer, dtype, len))
    }

    /// Runs `body` once per `i < prm[0]` (`params.words[0]` is the count).
    pub(crate) fn map(
        &self,
        op: &'static str,
        params: &Params,
        inputs: &[&WgpuStorage],
        outputs: &[&WgpuStorage],
        body: &str,
    ) -> Result<()> {
        self.map_with(op, params, inputs, outputs, "", body)
    }

    /// [`WgpuBackend::map`] with extra WGSL function definitions `funcs` ahead of the entry point.
    pub(crate) fn map_with(
        &self,
        op: &'static str,
        params: &Params,
        inputs: &[&WgpuStorage],
        outputs: &[&WgpuStorage],
        funcs: &str,
        body: &str,
    ) -> Result<()> {
        let n = params.words.first().copied().unwrap_or(0) as usize;
        let shader = format!(
            "{}\n{funcs}\n@compute @workgroup_size({WG})\nfn main(@builtin(workgroup_id) wid: vec3<u32>, \
             @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {{\n\
             let i = (wid.y * nwg.x + wid.x) * {WG}u + lid;\nif (i >= prm[0]) {{ return; }}\n{body}\n}}\n",
            wgsl::header(inputs.len(), outputs.len())
        );
        let groups = self.ctx.grid(n.div_ceil(WG), op)?;
        self.launch(op, &shader, params, inputs, outputs, groups)
    }

    /// Folds `inner` terms into each of `outer` outputs (`params` starts with `[outer, inner]`).
    pub(crate) fn fold(
        &self,
        op: &'static str,
        params: &Params,
        inputs: &[&WgpuStorage],
        outputs: &[&WgpuStorage],
        f: &Fold<'_>,
    ) -> Result<()> {
        let outer = params.words[0] as usize;
        let head = wgsl::header(inputs.len(), outputs.len());
        let (ty, id, term, store) = (f.ty, &f.identity, &f.term, &f.store);
        let c = |a: &str, b: &str| (f.combine)(a, b);
        let args = "@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, \
                    @builtin(local_invocation_index) lid: u32";
        let (shader, groups) = if params.words[1] as usize >= WG_FOLD {
            let shader = format!(
                "{head}\nvar<workgroup> sh: array<{ty}, {WG}>;\n@compute @workgroup_size({WG})\n\
                 fn main({args}) {{\nlet o = wid.y * nwg.x + wid.x;\nlet valid = o < prm[0];\n\
                 var acc: {ty} = {id};\nif (valid) {{\nfor (var k = lid; k < prm[1]; k = k + {WG}u) {{\n\
                 {term}\nacc = {};\n}}\n}}\nsh[lid] = acc;\nworkgroupBarrier();\n\
                 for (var s = {}u; s > 0u; s = s >> 1u) {{\nif (lid < s) {{ sh[lid] = {}; }}\n\
                 workgroupBarrier();\n}}\nif (lid == 0u && valid) {{\nlet res = sh[0];\n{store}\n}}\n}}\n",
                c("acc", "term"),
                WG / 2,
                c("sh[lid]", "sh[lid + s]"),
            );
            (shader, self.ctx.grid(outer, op)?)
        } else {
            let shader = format!(
                "{head}\n@compute @workgroup_size({WG})\nfn main({args}) {{\n\
                 let o = (wid.y * nwg.x + wid.x) * {WG}u + lid;\nif (o >= prm[0]) {{ return; }}\n\
                 var acc: {ty} = {id};\nfor (var k = 0u; k < prm[1]; k = k + 1u) {{\n{term}\n\
                 acc = {};\n}}\nlet res = acc;\n{store}\n}}\n",
                c("acc", "term"),
            );
            (shader, self.ctx.grid(outer.div_ceil(WG), op)?)
        };
        self.launch(op, &shader, params, inputs, outputs, groups)
    }

    /// Records a dispatch of `shader` over `groups`.
    pub(crate) fn launch(
        &self,
        op: &'static str,
        shader: &str,
        params: &Params,
        inputs: &[&WgpuStorage],
        outputs: &[&WgpuStorage],
        groups: (u32, u32, u32),
    ) -> Result<()> {
        let ins: Vec<&wgpu::Buffer> = inputs.iter().map(|s| s.buffer()).collect();
        let outs: Vec<&wgpu::Buffer> = outputs.iter().map(|s| s.buffer()).collect();
        self.ctx.dispatch(Dispatch {
            op,
            shader,
            inputs: &ins,
            outputs: &outs,
            params: &params.words,
            groups,
        })
    }
}
