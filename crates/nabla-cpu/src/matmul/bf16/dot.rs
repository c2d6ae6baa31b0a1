//! The packed kernel: `MR x NR` output tiles held in 24 zmm accumulators, operands packed as
//! pairs of bf16 along `k` (one `u32` each), so that one `vdpbf16ps` adds two products into
//! each of 16 lanes.
//!
//! Threads share the packed right-operand block: for each block of `NC` columns and `KC` pairs the
//! threads pack its panels together, then each takes whole row blocks of the output (packing its
//! own rows of the left operand). So every element of the right operand is read and rounded once
//! per row of blocks, however many threads run, as in BLIS's loop structure.
//!
//! Packing rounds 16 elements at a time; lines that are contiguous along `k` (the usual layout of
//! both operands) are transposed eight lines at a time in registers, so the packed panel is written
//! in whole vectors.

use super::{Out, ToBf16, View};
use rayon::prelude::*;
use std::arch::x86_64::*;

/// Rows of an output tile.
const MR: usize = 8;
/// Columns of an output tile: three vectors of 16 lanes.
const NR: usize = 48;
/// Pairs of `k` per packed block: a `KC x NR` panel of the right operand is 36 KiB. Measured on
/// Zen 5 (GPT-2-sized products, best of 5): 380–410 GFLOP/s against 305–375 with 128 pairs and
/// 365–387 with 256.
const KC: usize = 192;
/// Rows of the left operand per packed block (192 KiB in L2).
const MC: usize = 256;
/// Columns of the right operand per packed block.
const NC: usize = 1536;
/// Lines transposed together by the packing of lines contiguous along `k`.
const GROUP: usize = 8;
/// Elements of a line rounded together: eight pairs.
const CHUNK: usize = 16;
// The transposed left operand's packing splits a chunk into two panels of `MR` lines.
const _: () = assert!(CHUNK == 2 * MR);

/// An element type whose runs the packing rounds to bf16 sixteen at a time.
pub(crate) trait Chunk: Copy {
    /// The bf16 bit patterns of the first `count <= 16` elements at `src`, zero in the other lanes.
    ///
    /// # Safety
    /// AVX512F, AVX512BW, AVX512VL and AVX512_BF16; `src` addresses `count` readable elements.
    unsafe fn round16(src: *const Self, count: usize) -> __m256i;
}

/// The mask of the first `count <= 16` lanes.
#[inline(always)]
fn lanes16(count: usize) -> __mmask16 {
    (((1u32 << count) - 1) & 0xffff) as __mmask16
}

impl Chunk for f32 {
    /// `vcvtneps2bf16`: round to nearest even, NaN kept quiet; it treats subnormal inputs as zero,
    /// as `vdpbf16ps` does with subnormal bf16 operands anyway.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn round16(src: *const f32, count: usize) -> __m256i {
        // SAFETY: the masked load reads only the `count` elements the caller guarantees.
        let v = unsafe { _mm512_maskz_loadu_ps(lanes16(count), src) };
        // SAFETY: `__m256bh` and `__m256i` are both 256 bits.
        unsafe { std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(v)) }
    }
}

impl Chunk for half::bf16 {
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
    unsafe fn round16(src: *const half::bf16, count: usize) -> __m256i {
        // SAFETY: the masked load reads only the `count` elements the caller guarantees.
        unsafe { _mm256_maskz_loadu_epi16(lanes16(count), src.cast()) }
    }
}

/// The `u32` holding bf16 patterns `lo` (low half) and `hi`.
#[inline(always)]
fn pair(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | (u32::from(hi) << 16)
}

/// Transposes eight rows of eight `u32`: element `q` of output `r` is element `r` of input `q`.
///
/// # Safety
/// AVX2.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn transpose8(v: [__m256i; GROUP]) -> [__m256i; GROUP] {
    // Pairs of lines interleaved: [a0 b0 a1 b1 | a4 b4 a5 b5] and [a2 b2 a3 b3 | a6 b6 a7 b7].
    let t = [
        _mm256_unpacklo_epi32(v[0], v[1]),
        _mm256_unpackhi_epi32(v[0], v[1]),
        _mm256_unpacklo_epi32(v[2], v[3]),
        _mm256_unpackhi_epi32(v[2], v[3]),
        _mm256_unpacklo_epi32(v[4], v[5]),
        _mm256_unpackhi_epi32(v[4], v[5]),
        _mm256_unpacklo_epi32(v[6], v[7]),
        _mm256_unpackhi_epi32(v[6], v[7]),
    ];
    // Columns c and c + 4 of four lines: u[c] for lines 0..4, u[4 + c] for lines 4..8.
    let u = [
        _mm256_unpacklo_epi64(t[0], t[2]),
        _mm256_unpackhi_epi64(t[0], t[2]),
        _mm256_unpacklo_epi64(t[1], t[3]),
        _mm256_unpackhi_epi64(t[1], t[3]),
        _mm256_unpacklo_epi64(t[4], t[6]),
        _mm256_unpackhi_epi64(t[4], t[6]),
        _mm256_unpacklo_epi64(t[5], t[7]),
        _mm256_unpackhi_epi64(t[5], t[7]),
    ];
    [
        _mm256_permute2x128_si256(u[0], u[4], 0x20),
        _mm256_permute2x128_si256(u[1], u[5], 0x20),
        _mm256_permute2x128_si256(u[2], u[6], 0x20),
        _mm256_permute2x128_si256(u[3], u[7], 0x20),
        _mm256_permute2x128_si256(u[0], u[4], 0x31),
        _mm256_permute2x128_si256(u[1], u[5], 0x31),
        _mm256_permute2x128_si256(u[2], u[6], 0x31),
        _mm256_permute2x128_si256(u[3], u[7], 0x31),
    ]
}

/// Packs `pairs` pairs along `k`, from pair `p0` on, of each of the `lines.rows <= lanes` lines of
/// `lines` (element `(line, kk)` is element `kk` of that line) into `dst[p * lanes + line]`, as
/// bf16 bit patterns two to a `u32`, zero past the end of `k` and past the last line.
///
/// # Safety
/// AVX512F, AVX512BW, AVX512VL and AVX512_BF16 (so that the conversions vectorise with them).
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
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
    let used = len.div_ceil(2);
    dst[used * lanes..].fill(0);
    if lines.cs == 1 && lanes.is_multiple_of(GROUP) {
        // SAFETY: the CPU features are the caller's guarantee.
        unsafe { pack_along_k(&mut dst[..used * lanes], lines, k0, len, lanes) };
    } else if lines.rs == 1 && lines.rows == lanes {
        // SAFETY: as above.
        unsafe { pack_across_lines(&mut dst[..used * lanes], lines, k0, len, lanes) };
    } else {
        pack_gathered(&mut dst[..used * lanes], lines, k0, len, lanes);
    }
}

/// Packs the left operand's rows `lines` as [`pack`] does, into consecutive panels of [`MR`] lines
/// (`pairs * MR` each). Rows that are contiguous across lines (a transposed operand) are read a
/// whole row block at a time, one run of `lines.rows` values per `k`, rather than [`MR`] values from
/// each of many distant rows.
///
/// # Safety
/// As [`pack`]; `dst` holds `lines.rows.div_ceil(MR) * pairs * MR` elements.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn pack_panels<T: ToBf16>(dst: &mut [u32], lines: View<'_, T>, p0: usize, pairs: usize) {
    let panels = lines.rows.div_ceil(MR);
    if lines.rs != 1 || lines.cs == 1 || panels == 1 {
        for panel in 0..panels {
            let rows = lines.rows(panel * MR, MR.min(lines.rows - panel * MR));
            // SAFETY: as above.
            unsafe { pack(&mut dst[panel * pairs * MR..], rows, p0, pairs, MR) };
        }
        return;
    }
    let k = lines.cols;
    let (k0, k1) = ((2 * p0).min(k), (2 * (p0 + pairs)).min(k));
    let dst = &mut dst[..panels * pairs * MR];
    if k1 - k0 < 2 * pairs || !lines.rows.is_multiple_of(MR) {
        dst.fill(0);
    }
    let run = |kk: usize, lane: usize, count: usize| {
        let start = (lines.offset as isize + kk as isize * lines.cs) as usize + lane;
        let run = &lines.data[start..start + count];
        // SAFETY: the CPU features are the caller's; `run` holds `count` elements.
        unsafe { _mm512_cvtepu16_epi32(T::round16(run.as_ptr(), count)) }
    };
    for (p, kk) in (k0..k1).step_by(2).enumerate() {
        for lane in (0..lines.rows).step_by(CHUNK) {
            let count = CHUNK.min(lines.rows - lane);
            let mut two = run(kk, lane, count);
            if kk + 1 < k1 {
                two = _mm512_or_si512(two, _mm512_slli_epi32(run(kk + 1, lane, count), 16));
            }
            // Lanes `lane..lane + 8` and `lane + 8..lane + 16` belong to consecutive panels.
            let halves = [
                _mm512_castsi512_si256(two),
                _mm512_extracti64x4_epi64::<1>(two),
            ];
            for (h, half) in halves.into_iter().enumerate() {
                let first = lane + h * MR;
                if first >= lines.rows {
                    break;
                }
                let at = (first / MR) * pairs * MR + p * MR;
                let out = &mut dst[at..at + MR];
                let mask = lanes16(MR.min(lines.rows - first)) as __mmask8;
                // SAFETY: the masked store writes only elements of `out`.
                unsafe { _mm256_mask_storeu_epi32(out.as_mut_ptr().cast(), mask, half) };
            }
        }
    }
}

/// [`pack`] of lines contiguous along `k`: [`CHUNK`] elements of each of [`GROUP`] lines are
/// rounded, transposed in registers and stored as [`GROUP`]-lane runs of eight pairs.
///
/// # Safety
/// As [`pack`]; `dst` holds `len.div_ceil(2) * lanes` pairs, `lanes` is a multiple of [`GROUP`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn pack_along_k<T: ToBf16>(
    dst: &mut [u32],
    lines: View<'_, T>,
    k0: usize,
    len: usize,
    lanes: usize,
) {
    for group in (0..lanes).step_by(GROUP) {
        let present = lines.rows.saturating_sub(group).min(GROUP);
        for c in (0..len).step_by(CHUNK) {
            let count = CHUNK.min(len - c);
            let mut v = [_mm256_setzero_si256(); GROUP];
            for (r, v) in v.iter_mut().enumerate().take(present) {
                let line = lines.offset as isize + (group + r) as isize * lines.rs;
                let run = &lines.data[line as usize + k0 + c..][..count];
                // SAFETY: the CPU features are the caller's; `run` holds `count` elements.
                *v = unsafe { T::round16(run.as_ptr(), count) };
            }
            // SAFETY: AVX2 is implied by the caller's features.
            let columns = unsafe { transpose8(v) };
            for (q, column) in columns.iter().enumerate().take(count.div_ceil(2)) {
                let at = (c / 2 + q) * lanes + group;
                let out = &mut dst[at..at + GROUP];
                // SAFETY: `out` holds the eight `u32` stored.
                unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), *column) };
            }
        }
    }
}

/// [`pack`] of `lanes` lines that are contiguous across lines: element `kk` of every line is one
/// run of `lanes` values, rounded sixteen at a time and interleaved with the next `kk`'s.
///
/// # Safety
/// As [`pack`]; `dst` holds `len.div_ceil(2) * lanes` pairs.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn pack_across_lines<T: ToBf16>(
    dst: &mut [u32],
    lines: View<'_, T>,
    k0: usize,
    len: usize,
    lanes: usize,
) {
    let run = |kk: usize, lane: usize, count: usize| {
        let start = (lines.offset as isize + kk as isize * lines.cs) as usize + lane;
        let run = &lines.data[start..start + count];
        // SAFETY: the CPU features are the caller's; `run` holds `count` elements.
        unsafe { _mm512_cvtepu16_epi32(T::round16(run.as_ptr(), count)) }
    };
    for (p, out) in dst.chunks_exact_mut(lanes).enumerate() {
        let kk = k0 + 2 * p;
        for lane in (0..lanes).step_by(CHUNK) {
            let count = CHUNK.min(lanes - lane);
            let mut pairs = run(kk, lane, count);
            if kk + 1 < k0 + len {
                pairs = _mm512_or_si512(pairs, _mm512_slli_epi32(run(kk + 1, lane, count), 16));
            }
            let out = &mut out[lane..lane + count];
            // SAFETY: the masked store writes only the `count` elements of `out`.
            unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().cast(), lanes16(count), pairs) };
        }
    }
}

/// [`pack`] of lines of any strides, element by element.
#[inline(always)]
fn pack_gathered<T: ToBf16>(
    dst: &mut [u32],
    lines: View<'_, T>,
    k0: usize,
    len: usize,
    lanes: usize,
) {
    for line in 0..lines.rows {
        for (p, out) in dst.chunks_exact_mut(lanes).enumerate() {
            let kk = k0 + 2 * p;
            let lo = lines.at(line, kk).bf16_bits();
            let hi = if kk + 1 < k0 + len {
                lines.at(line, kk + 1).bf16_bits()
            } else {
                0
            };
            out[line] = pair(lo, hi);
        }
    }
    if lines.rows < lanes {
        for out in dst.chunks_exact_mut(lanes) {
            out[lines.rows..].fill(0);
        }
    }
}

/// A task of one packed block: output rows `rows` (in whole tiles, at most [`MC`]) against the right
/// operand's panels `panels`.
#[derive(Clone, Copy, Debug)]
struct Task {
    rows: (usize, usize),
    panels: (usize, usize),
}

/// The tasks that cover `m` rows and `panels` column panels: one per row block of [`MC`] rows on a
/// single thread; with more threads, row blocks small enough that each thread gets some, and the
/// panels split too when there are still fewer than two tasks per thread.
fn tasks(m: usize, panels: usize, threads: usize) -> Vec<Task> {
    let mc = if threads > 1 {
        MC.min(m.div_ceil(threads).next_multiple_of(MR))
    } else {
        MC
    };
    let row_blocks = m.div_ceil(mc);
    let groups = (2 * threads).div_ceil(row_blocks).clamp(1, panels.max(1));
    let mut out = Vec::with_capacity(row_blocks * groups);
    for r in 0..row_blocks {
        for g in 0..groups {
            out.push(Task {
                rows: (r * mc, ((r + 1) * mc).min(m)),
                panels: (g * panels / groups, (g + 1) * panels / groups),
            });
        }
    }
    out
}

/// `out = a b`, over `threads` threads of the pool (1: on the calling thread only).
///
/// # Safety
/// The CPU must have AVX512F, AVX512BW, AVX512VL and AVX512_BF16; `out` must address
/// `a.rows x b.cols` elements owned by the caller.
pub(super) unsafe fn product<T: ToBf16>(out: Out, a: View<'_, T>, b: View<'_, T>, threads: usize) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    debug_assert!(out.rows == m && out.cols == n);
    let pairs_total = k.div_ceil(2);
    let kc_max = KC.min(pairs_total);
    let mut packed_b = packing_buffer(kc_max * NC.min(n).next_multiple_of(NR));
    // With several column blocks, a left operand that fits is packed once instead of once a block.
    let whole_a = if n > NC && m.next_multiple_of(MR) * pairs_total * 4 <= WHOLE_A_BYTES {
        // SAFETY: the CPU features are the caller's guarantee.
        Some(unsafe { pack_whole(a, threads) })
    } else {
        None
    };
    // Each task's own packing buffer, needed only when the left operand is not packed whole.
    let a_len = if whole_a.is_some() {
        0
    } else {
        kc_max * MC.min(m.next_multiple_of(MR))
    };
    // The right operand's lines along k are its columns.
    let b_lines = b.t();
    for j0 in (0..n).step_by(NC) {
        let nc = NC.min(n - j0);
        let panels = nc.div_ceil(NR);
        let tasks = tasks(m, panels, threads);
        for p0 in (0..pairs_total).step_by(KC) {
            let kc = KC.min(pairs_total - p0);
            let packed_b = &mut packed_b[..panels * kc * NR];
            let pack_panel = |(panel, dst): (usize, &mut [u32])| {
                let jr = panel * NR;
                let lines = b_lines.rows(j0 + jr, NR.min(nc - jr));
                // SAFETY: the CPU features are the caller's guarantee.
                unsafe { pack(dst, lines, p0, kc, NR) };
            };
            if threads > 1 {
                packed_b
                    .par_chunks_mut(kc * NR)
                    .enumerate()
                    .for_each(pack_panel);
            } else {
                packed_b
                    .chunks_mut(kc * NR)
                    .enumerate()
                    .for_each(pack_panel);
            }
            let block = Block {
                out: &out,
                a,
                whole_a: whole_a
                    .as_deref()
                    .map(|w| &w[p0 * m.next_multiple_of(MR)..]),
                packed_b,
                j0,
                nc,
                p0,
                kc,
            };
            let run = |packed_a: &mut Vec<u32>, task: &Task| {
                // SAFETY: as above; tasks cover disjoint tiles of `out`.
                unsafe { block.run(*task, packed_a) }
            };
            if threads > 1 {
                tasks
                    .par_iter()
                    .for_each_init(|| Spare(packing_buffer(a_len)), |a, t| run(&mut a.0, t));
            } else {
                let mut packed_a = packing_buffer(a_len);
                tasks.iter().for_each(|task| run(&mut packed_a, task));
                give_back(packed_a);
            }
        }
    }
    give_back(packed_b);
}

/// Packing buffers a thread keeps at most.
const SPARES: usize = 4;

thread_local! {
    /// This thread's packing buffers, kept between products so that the many small products of a
    /// convolution neither allocate nor zero theirs each time. A buffer is taken out while in use,
    /// so a product that runs inside another's task (rayon may start one while waiting) gets its
    /// own.
    static SPARE_BUFFERS: std::cell::RefCell<Vec<Vec<u32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A packing buffer of at least `len` elements: the smallest spare of this thread's that holds
/// them, or a new one. The packing writes every element the kernel reads, so a spare's old values
/// never show. (A buffer holds at most `KC x NC` pairs, 1.2 MiB.)
fn packing_buffer(len: usize) -> Vec<u32> {
    let spare = SPARE_BUFFERS.with_borrow_mut(|spares| {
        let fits = (0..spares.len())
            .filter(|&i| spares[i].len() >= len)
            .min_by_key(|&i| spares[i].len())?;
        Some(spares.swap_remove(fits))
    });
    spare.unwrap_or_else(|| vec![0u32; len])
}

/// Keeps `buffer` as one of this thread's spares (the largest [`SPARES`]).
fn give_back(buffer: Vec<u32>) {
    SPARE_BUFFERS.with_borrow_mut(|spares| {
        spares.push(buffer);
        if spares.len() > SPARES {
            let smallest = (0..spares.len()).min_by_key(|&i| spares[i].len());
            spares.swap_remove(smallest.unwrap_or(0));
        }
    });
}

/// A task thread's packing buffer, given back when the thread's share of the tasks is done.
struct Spare(Vec<u32>);

impl Drop for Spare {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.0));
    }
}

/// The largest packed left operand kept whole across column blocks, in bytes.
const WHOLE_A_BYTES: usize = 8 << 20;

/// The whole left operand packed: for each block of [`KC`] pairs (from pair `p0`, `kc` of them),
/// its row panels at `p0 * m + (i0 / MR) * kc * MR` with `m` rounded up to whole panels.
///
/// # Safety
/// As [`product`].
unsafe fn pack_whole<T: ToBf16>(a: View<'_, T>, threads: usize) -> Vec<u32> {
    let (rows, pairs_total) = (a.rows.next_multiple_of(MR), a.cols.div_ceil(2));
    let mut whole = vec![0u32; rows * pairs_total];
    for (block, dst) in whole.chunks_mut(KC * rows).enumerate() {
        let (p0, kc) = (block * KC, KC.min(pairs_total - block * KC));
        let pack_rows = |(c, dst): (usize, &mut [u32])| {
            let i0 = c * MC;
            // SAFETY: the CPU features are the caller's guarantee.
            unsafe { pack_panels(dst, a.rows(i0, MC.min(a.rows - i0)), p0, kc) };
        };
        if threads > 1 {
            dst.par_chunks_mut(kc * MC).enumerate().for_each(pack_rows);
        } else {
            dst.chunks_mut(kc * MC).enumerate().for_each(pack_rows);
        }
    }
    whole
}

/// One block of `kc` pairs from pair `p0` and `nc` columns from `j0`, with its right operand
/// packed in `packed_b` (panels of `kc x NR`).
struct Block<'a, T> {
    out: &'a Out,
    a: View<'a, T>,
    /// The block's pairs of the whole left operand, packed, when it was packed whole.
    whole_a: Option<&'a [u32]>,
    packed_b: &'a [u32],
    j0: usize,
    nc: usize,
    p0: usize,
    kc: usize,
}

impl<T: ToBf16> Block<'_, T> {
    /// Packs the task's rows of the left operand into `packed_a` and adds their products with the
    /// task's panels to the output (stores them, for the first block along `k`).
    ///
    /// # Safety
    /// As [`product`]; no other task writes the task's tiles at the same time.
    unsafe fn run(&self, task: Task, packed_a: &mut [u32]) {
        let (i0, i1) = task.rows;
        let kc = self.kc;
        let packed_a: &[u32] = match self.whole_a {
            Some(whole) => &whole[i0 * kc..],
            None => {
                // SAFETY: the CPU features are the caller's guarantee.
                unsafe { pack_panels(packed_a, self.a.rows(i0, i1 - i0), self.p0, kc) };
                packed_a
            }
        };
        for bp in task.panels.0..task.panels.1 {
            let jr = bp * NR;
            for (ap, ir) in (i0..i1).step_by(MR).enumerate() {
                let tile = Tile {
                    // SAFETY: the tile's first element lies inside `out`.
                    ptr: unsafe { self.out.ptr.add(ir * self.out.ld + self.j0 + jr) },
                    rows: MR.min(i1 - ir),
                    cols: NR.min(self.nc - jr),
                    ld: self.out.ld,
                };
                // SAFETY: the CPU features are the caller's guarantee; the packed panels hold
                // `kc` pairs each.
                unsafe {
                    micro(
                        kc,
                        packed_a[ap * kc * MR..].as_ptr(),
                        self.packed_b[bp * kc * NR..].as_ptr(),
                        &tile,
                        self.p0 == 0,
                    )
                };
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
