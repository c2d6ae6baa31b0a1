//! Random tensors: element `i` is Philox-4x32-10 of the counter `key.offset + i` under `key.seed`, the
//! same bits the CPU backend draws ([`nabla_core::RngKey::bits`]).
//!
//! Bernoulli draws compare the same 53-bit integer against `p * 2^53` exactly, so they match the CPU
//! bit for bit. Uniform and normal draws are computed in `f32` instead of `f64` (GPUs lack `f64`): they
//! agree with the CPU to about one `f32` rounding for uniform draws and to ~1e-5 (relative to the
//! standard deviation) for normal draws.

use crate::WgpuBackend;
use crate::kernel::Params;
use crate::storage::{WgpuStorage, check_dtype};
use crate::wgsl::{cast_expr, store};
use nabla_core::{DType, Distribution, Error, Result, RngKey};

const OP: &str = "random";

const PHILOX: &str = "
fn philox(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = ctr;
    var k = key;
    for (var r = 0u; r < 10u; r = r + 1u) {
        if (r > 0u) { k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u); }
        let p0 = mul_wide(0xD2511F53u, c.x);
        let p1 = mul_wide(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.y ^ c.y ^ k.x, p1.x, p0.y ^ c.w ^ k.y, p0.x);
    }
    return c;
}
fn draw(i: u32) -> vec4<u32> {
    let lo = prm[1] + i;
    let hi = prm[2] + select(0u, 1u, lo < i);
    return philox(vec4<u32>(lo, hi, 0u, 0u), vec2<u32>(prm[3], prm[4]));
}
fn unit_hi(a: u32) -> f32 { return f32(a >> 8u) * bitcast<f32>(0x33800000u); }
fn one_minus_unit(a: u32, b: u32) -> f32 {
    let m = i64_sub(vec2<u32>(0u, 0x200000u), vec2<u32>((a << 21u) | (b >> 11u), a >> 11u));
    return (f32(m.y) * 4294967296.0 + f32(m.x)) * bitcast<f32>(0x25000000u);
}
fn unit_lo(a: u32, b: u32) -> f32 { return f32(((a & 0xffu) << 13u) | (b >> 19u)) * bitcast<f32>(0x29000000u); }
";

fn validate(dist: Distribution) -> Result<()> {
    let ok = match dist {
        Distribution::Uniform { low, high } => low.is_finite() && high.is_finite() && low < high,
        Distribution::Normal { mean, std } => mean.is_finite() && std.is_finite() && std >= 0.0,
        Distribution::Bernoulli { p } => (0.0..=1.0).contains(&p),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(OP, format!("invalid parameters {dist:?}")))
    }
}

/// The largest `f32` below `x` (for finite `x`).
fn next_below(x: f32) -> f32 {
    let b = x.to_bits();
    if x > 0.0 {
        f32::from_bits(b - 1)
    } else if x == 0.0 {
        f32::from_bits(0x8000_0001)
    } else {
        f32::from_bits(b + 1)
    }
}

impl WgpuBackend {
    pub(crate) fn random_impl(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<WgpuStorage> {
        validate(dist)?;
        check_dtype(OP, dtype)?;
        let float = matches!(dtype, DType::F32 | DType::F16);
        if !float && !matches!(dist, Distribution::Bernoulli { .. }) {
            return Err(Error::dtype(OP, dtype)
                .with_hint("uniform and normal draws need a real float dtype"));
        }
        let out = self.out(OP, dtype, len)?;
        if len == 0 {
            return Ok(out);
        }
        let mut params = Params::new(&[
            len as u32,
            key.offset as u32,
            (key.offset >> 32) as u32,
            key.seed as u32,
            (key.seed >> 32) as u32,
        ]);
        let round = |v: &str| cast_expr(DType::F32, dtype, v);
        let body = match dist {
            Distribution::Uniform { low, high } => {
                let (lo, hi) = (low as f32, high as f32);
                let below = next_below(hi);
                let cap = if below < lo { lo } else { below };
                for v in [lo, (high - low) as f32, hi, cap] {
                    params.push(v.to_bits());
                }
                format!(
                    "let b = draw(i);\nlet lo = bitcast<f32>(prm[5]);\nlet r = bitcast<f32>(prm[6]);\n\
                     var v = lo + r * unit_hi(b.x) + r * unit_lo(b.x, b.y);\n\
                     if (v >= bitcast<f32>(prm[7])) {{ v = bitcast<f32>(prm[8]); }}\n{}",
                    store(dtype, "out0", "i", &round("v"))
                )
            }
            Distribution::Normal { mean, std } => {
                params.push((mean as f32).to_bits());
                params.push((std as f32).to_bits());
                format!(
                    "let b = draw(i);\nlet u2 = unit_hi(b.z) + unit_lo(b.z, b.w);\n\
                     let z = sqrt(-2.0 * log_f(one_minus_unit(b.x, b.y))) * cos_turn(u2);\n\
                     let v = bitcast<f32>(prm[5]) + bitcast<f32>(prm[6]) * z;\n{}",
                    store(dtype, "out0", "i", &round("v"))
                )
            }
            Distribution::Bernoulli { p } => {
                let t = (p * (1u64 << 53) as f64).ceil() as u64;
                params.push(t as u32);
                params.push((t >> 32) as u32);
                format!(
                    "let b = draw(i);\nlet hi = b.x >> 11u;\nlet lo = (b.x << 21u) | (b.y >> 11u);\n\
                     let hit = hi < prm[6] || (hi == prm[6] && lo < prm[5]);\n{}",
                    store(dtype, "out0", "i", &cast_expr(DType::Bool, dtype, "hit"))
                )
            }
        };
        self.map_with(OP, &params, &[], &[&out], PHILOX, &body)?;
        Ok(out)
    }
}
