//! Seeded, counter-based random numbers that every backend reproduces bit for bit.
//!
//! A [`Generator`] hands out [`RngKey`]s; element `i` of a random tensor drawn with key `k` is a pure
//! function of `(k.seed, k.offset + i)` through the Philox-4x32-10 bijection. A GPU backend computes
//! the same numbers in parallel, and no process-wide state is involved.

/// A seeded random-number generator: a seed and a running counter.
///
/// ```
/// use nabla_core::Generator;
/// let mut g = Generator::new(42);
/// let a = g.next_key(10);
/// let b = g.next_key(10);
/// assert_eq!(a.offset, 0);
/// assert_eq!(b.offset, 10);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    counter: u64,
}

impl Generator {
    /// A generator whose stream is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Generator { seed, counter: 0 }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// How many draws have been handed out: with the seed, the generator's whole state.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// The generator with this seed that has handed out `counter` draws: restores a state saved with
    /// [`Generator::seed`] and [`Generator::counter`], so a resumed run draws what the original would.
    ///
    /// ```
    /// use nabla_core::Generator;
    /// let mut g = Generator::new(7);
    /// g.next_key(5);
    /// let mut copy = Generator::from_state(g.seed(), g.counter());
    /// assert_eq!(copy.next_key(3), g.next_key(3));
    /// ```
    pub fn from_state(seed: u64, counter: u64) -> Self {
        Generator { seed, counter }
    }

    /// A new generator seeded by one draw from this one: an independent stream that a module owning
    /// its randomness (dropout, a layer rebuilt for a traced program) starts from.
    ///
    /// ```
    /// use nabla_core::Generator;
    /// let (mut a, mut b) = (Generator::new(7), Generator::new(7));
    /// assert_eq!(a.fork().next_key(1), b.fork().next_key(1));
    /// assert_eq!(a.counter(), 1);
    /// ```
    pub fn fork(&mut self) -> Generator {
        let bits = self.next_key(1).bits(0);
        Generator::new(u64::from(bits[0]) | (u64::from(bits[1]) << 32))
    }

    /// Reserves `n` draws and returns the key that identifies them.
    pub fn next_key(&mut self, n: usize) -> RngKey {
        let key = RngKey {
            seed: self.seed,
            offset: self.counter,
        };
        self.counter = self.counter.wrapping_add(n as u64);
        key
    }
}

/// Identifies a block of random draws: element `i` uses counter `offset + i` under `seed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RngKey {
    /// The generator's seed.
    pub seed: u64,
    /// Counter of the first element.
    pub offset: u64,
}

impl RngKey {
    /// Four independent uniformly distributed 32-bit words for element `i`.
    #[inline]
    pub fn bits(&self, i: u64) -> [u32; 4] {
        let c = self.offset.wrapping_add(i);
        philox4x32_10(
            [c as u32, (c >> 32) as u32, 0, 0],
            [self.seed as u32, (self.seed >> 32) as u32],
        )
    }

    /// A uniform `f64` in `[0, 1)` for element `i` (53 random bits).
    #[inline]
    pub fn uniform_f64(&self, i: u64) -> f64 {
        let b = self.bits(i);
        unit_f64(b[0], b[1])
    }

    /// A standard normal `f64` for element `i` (Box–Muller on two independent uniforms).
    #[inline]
    pub fn normal_f64(&self, i: u64) -> f64 {
        let b = self.bits(i);
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - unit_f64(b[0], b[1]);
        let u2 = unit_f64(b[2], b[3]);
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[inline]
fn unit_f64(hi: u32, lo: u32) -> f64 {
    let bits = ((hi as u64) << 32 | lo as u64) >> 11;
    bits as f64 * (1.0 / (1u64 << 53) as f64)
}

#[inline]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = a as u64 * b as u64;
    ((p >> 32) as u32, p as u32)
}

/// The Philox-4x32 bijection with 10 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
#[inline]
pub fn philox4x32_10(mut c: [u32; 4], mut k: [u32; 2]) -> [u32; 4] {
    const M0: u32 = 0xD251_1F53;
    const M1: u32 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(W0);
            k[1] = k[1].wrapping_add(W1);
        }
        let (hi0, lo0) = mulhilo(M0, c[0]);
        let (hi1, lo1) = mulhilo(M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_known_answer() {
        // Known-answer vectors from the Random123 distribution (kat_vectors, philox4x32 10 rounds).
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([0xffffffff; 4], [0xffffffff; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
    }

    #[test]
    fn moments_are_right() {
        let key = Generator::new(7).next_key(0);
        let n = 200_000u64;
        let (mut s, mut s2) = (0.0, 0.0);
        for i in 0..n {
            let z = key.normal_f64(i);
            s += z;
            s2 += z * z;
        }
        let mean = s / n as f64;
        let var = s2 / n as f64 - mean * mean;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "var {var}");
        let u: f64 = (0..n).map(|i| key.uniform_f64(i)).sum::<f64>() / n as f64;
        assert!((u - 0.5).abs() < 0.005, "uniform mean {u}");
    }
}
