//! The packed kernel: `MR x NR` output tiles held in 24 zmm accumulators, operands packed as
//! pairs of bf16 along `k` (one `u32` each), so that one `vdpbf16ps` adds two products into
//! each of 16 lanes.

use super::{Out, ToBf16, View};
use std::arch::x86_64::*;

/// Rows of an output tile.
const MR: usize = 8;
/// Columns of an output tile: three vectors of 16 lanes.
const NR: usize = 48;
/// Pairs of `k` per packed block: a `KC x NR` panel of the right operand (24 KiB) stays in L1.
const KC: usize = 128;
/// Rows of the left operand per packed block (128 KiB in L2).
const MC: usize = 256;
/// Columns of the right operand per packed block.
const NC: usize = 1536;

/// Rounds `src` to bf16 bit patterns in `dst` (a loop the compiler vectorises with AVX-512).
#[inline(always)]
fn to_bits<T: ToBf16>(src: impl Iterator<Item = T>, dst: &mut [u16]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.bf16_bits();
    }
}

/// The `u32` holding bf16 patterns `lo` (low half) and `hi`.
#[inline(always)]
fn pair(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | (u32::from(hi) << 16)
}

/// Packs `pairs` pairs along `k`, from pair `p0` on, of each of the `lines.rows <= lanes` lines of
/// `lines` (element `(line, kk)` is element `kk` of that line) into `dst[p * lanes + line]`, as
/// bf16 bit patterns two to a `u32`, zero past the end of `k` and past the last line.
///
/// # Safety
/// AVX512F, AVX512BW and AVX512_BF16 (only so that the conversions vectorise with them).
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn pack<T: ToBf16>(
    dst: &mut [u32],
    lines: View<'_, T>,
    p0: usize,
    pairs: usize,
    lanes: usize,
) {
    let k = lines.cols;
    let dst = &mut dst[..pairs * lanes];
    let (k0, k1) = ((2 * p0).min(k), (2 * (p0 + pairs)).min(k));
    let len = k1 - k0;
    if lines.rows < lanes || len < 2 * pairs {
        dst.fill(0);
    }
    let mut bits = [0u16; 2 * KC];
    if lines.rs == 1 && lines.rows == lanes && lines.cs != 1 {
        // Contiguous across lines: element kk of every line is one run of `lanes` values.
        let mut hi = [0u16; NR];
        for p in 0..len.div_ceil(2) {
            let kk = k0 + 2 * p;
            let run = |kk: usize| {
                let start = (lines.offset as isize + kk as isize * lines.cs) as usize;
                lines.data[start..start + lanes].iter().copied()
            };
            to_bits(run(kk), &mut bits[..lanes]);
            if kk + 1 < k1 {
                to_bits(run(kk + 1), &mut hi[..lanes]);
            } else {
                hi[..lanes].fill(0);
            }
            for ((d, &lo), &hi) in dst[p * lanes..(p + 1) * lanes]
                .iter_mut()
                .zip(&bits)
                .zip(&hi)
            {
                *d = pair(lo, hi);
            }
        }
        return;
    }
    for line in 0..lines.rows {
        // One line's run along k, rounded, then spread `lanes` apart.
        let base = lines.offset as isize + line as isize * lines.rs;
        if lines.cs == 1 {
            let start = (base + k0 as isize) as usize;
            to_bits(
                lines.data[start..start + len].iter().copied(),
                &mut bits[..len],
            );
        } else {
            to_bits((k0..k1).map(|kk| lines.at(line, kk)), &mut bits[..len]);
        }
        if len % 2 == 1 {
            bits[len] = 0;
        }
        for (p, two) in bits[..len.next_multiple_of(2)].chunks_exact(2).enumerate() {
            dst[p * lanes + line] = pair(two[0], two[1]);
        }
    }
}

/// `out = a b` on this thread.
///
/// # Safety
/// The CPU must have AVX512F, AVX512BW and AVX512_BF16; `out` must address `a.rows x b.cols`
/// elements owned by the caller.
pub(super) unsafe fn product<T: ToBf16>(out: Out, a: View<'_, T>, b: View<'_, T>) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let pairs_total = k.div_ceil(2);
    let mut packed_b = vec![0u32; KC * NC.next_multiple_of(NR)];
    let mut packed_a = vec![0u32; KC * MC.next_multiple_of(MR)];
    // The right operand's lines along k are its columns.
    let b_lines = b.t();
    for j0 in (0..n).step_by(NC) {
        let nc = NC.min(n - j0);
        for p0 in (0..pairs_total).step_by(KC) {
            let kc = KC.min(pairs_total - p0);
            let first = p0 == 0;
            for (panel, jr) in (0..nc).step_by(NR).enumerate() {
                let cols = NR.min(nc - jr);
                let lines = b_lines.rows(j0 + jr, cols);
                // SAFETY: the CPU features are the caller's guarantee.
                unsafe { pack(&mut packed_b[panel * KC * NR..], lines, p0, kc, NR) };
            }
            for i0 in (0..m).step_by(MC) {
                let mc = MC.min(m - i0);
                for (panel, ir) in (0..mc).step_by(MR).enumerate() {
                    let rows = MR.min(mc - ir);
                    let lines = a.rows(i0 + ir, rows);
                    // SAFETY: as above.
                    unsafe { pack(&mut packed_a[panel * KC * MR..], lines, p0, kc, MR) };
                }
                for (bp, jr) in (0..nc).step_by(NR).enumerate() {
                    for (ap, ir) in (0..mc).step_by(MR).enumerate() {
                        let tile = Tile {
                            // SAFETY: the tile's first element lies inside `out`.
                            ptr: unsafe { out.ptr.add((i0 + ir) * out.ld + j0 + jr) },
                            rows: MR.min(mc - ir),
                            cols: NR.min(nc - jr),
                            ld: out.ld,
                        };
                        // SAFETY: the CPU features are the caller's guarantee; the packed
                        // panels hold `kc` pairs each.
                        unsafe {
                            micro(
                                kc,
                                packed_a[ap * KC * MR..].as_ptr(),
                                packed_b[bp * KC * NR..].as_ptr(),
                                &tile,
                                first,
                            )
                        };
                    }
                }
            }
        }
    }
}

/// Where one tile of the output goes.
struct Tile {
    ptr: *mut f32,
    rows: usize,
    cols: usize,
    ld: usize,
}

/// Adds (or, when `first`, stores) the `MR x NR` product of `kc` packed pairs to the tile.
///
/// # Safety
/// AVX512F, AVX512BW and AVX512_BF16; `a` holds `kc * MR` and `b` `kc * NR` pairs; the tile
/// addresses `rows x cols` writable elements.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn micro(kc: usize, a: *const u32, b: *const u32, tile: &Tile, first: bool) {
    let mut acc = [[_mm512_setzero_ps(); 3]; MR];
    for p in 0..kc {
        // SAFETY: the packed panels hold `kc` pairs of `NR` and `MR` lanes.
        let (bv, ap) = unsafe {
            let bp = b.add(p * NR);
            (
                [
                    _mm512_loadu_si512(bp.cast()),
                    _mm512_loadu_si512(bp.add(16).cast()),
                    _mm512_loadu_si512(bp.add(32).cast()),
                ],
                a.add(p * MR),
            )
        };
        let bv: [__m512bh; 3] = bv.map(|v| unsafe { std::mem::transmute::<__m512i, __m512bh>(v) });
        for (i, row) in acc.iter_mut().enumerate() {
            // SAFETY: `i < MR`.
            let pair = unsafe { *ap.add(i) } as i32;
            let av: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(pair)) };
            for (c, &v) in row.iter_mut().zip(&bv) {
                *c = _mm512_dpbf16_ps(*c, av, v);
            }
        }
    }
    if tile.rows == MR && tile.cols == NR {
        for (i, row) in acc.iter().enumerate() {
            for (v, c) in row.iter().enumerate() {
                // SAFETY: the tile is whole, so all `NR` columns of row `i` are in bounds.
                unsafe {
                    let dst = tile.ptr.add(i * tile.ld + 16 * v);
                    let value = if first {
                        *c
                    } else {
                        _mm512_add_ps(_mm512_loadu_ps(dst), *c)
                    };
                    _mm512_storeu_ps(dst, value);
                }
            }
        }
        return;
    }
    let mut local = [[0.0f32; NR]; MR];
    for (i, row) in acc.iter().enumerate() {
        for (v, c) in row.iter().enumerate() {
            // SAFETY: 16 lanes fit in the local row at `16 * v`.
            unsafe { _mm512_storeu_ps(local[i][16 * v..].as_mut_ptr(), *c) };
        }
    }
    for (i, row) in local.iter().enumerate().take(tile.rows) {
        for (j, &value) in row.iter().enumerate().take(tile.cols) {
            // SAFETY: `i < rows` and `j < cols`.
            unsafe {
                let dst = tile.ptr.add(i * tile.ld + j);
                *dst = if first { value } else { *dst + value };
            }
        }
    }
}
