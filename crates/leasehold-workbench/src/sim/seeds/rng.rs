//! The simulation's only source of chance: a small seeded generator (SplitMix64).
//!
//! Nothing else in a seeded run draws randomness that can change what happens: every fault,
//! workload choice and action length comes from a [`SimRng`] derived from the seed, and each
//! consumer (an elector's fault wrapper, a workload task) has its own stream, so the draws of one
//! never shift those of another.

use std::time::Duration;

/// SplitMix64 (Steele, Lea and Flood's generator, as used to seed xoshiro): one 64-bit state
/// advanced by a constant, then mixed. Fast, and good enough for choosing faults.
#[derive(Debug, Clone)]
pub(crate) struct SimRng {
    state: u64,
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl SimRng {
    /// The generator of `seed`'s stream number `stream` (streams of one seed are independent).
    pub(crate) fn new(seed: u64, stream: u64) -> Self {
        let mut mixer = Self {
            state: seed ^ stream.wrapping_mul(GOLDEN).rotate_left(17),
        };
        // Mix once more so that nearby seeds and streams start far apart.
        let state = mixer.next_u64() ^ stream;
        Self { state }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0). The modulo bias is below 2⁻³² for the small `n`
    /// used here.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// A number in `lo..=hi` (`lo` when `hi < lo`).
    pub(crate) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }

    /// A uniform number in `[0, 1)` (53 bits).
    pub(crate) fn unit(&mut self) -> f64 {
        // 53 random bits over 2^53: exactly representable, never 1.0.
        let bits = self.next_u64() >> 11;
        bits as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p` (never for `p <= 0`, always for `p >= 1`).
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// A whole number of milliseconds in `lo..=hi`.
    pub(crate) fn millis(&mut self, lo: Duration, hi: Duration) -> Duration {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Duration::from_millis(self.between(ms(lo), ms(hi)))
    }

    /// One of `items` (`None` for an empty slice).
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        let n = u64::try_from(items.len()).unwrap_or(u64::MAX);
        items.get(usize::try_from(self.below(n)).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_and_stream_give_the_same_numbers() {
        let draw = |seed, stream| {
            let mut r = SimRng::new(seed, stream);
            (0..8).map(|_| r.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(7, 1), draw(7, 1));
        assert_ne!(draw(7, 1), draw(7, 2));
        assert_ne!(draw(7, 1), draw(8, 1));
    }

    #[test]
    fn draws_stay_within_their_bounds() {
        let mut r = SimRng::new(1, 0);
        for _ in 0..10_000 {
            assert!(r.below(5) < 5);
            let b = r.between(3, 9);
            assert!((3..=9).contains(&b));
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            let d = r.millis(Duration::from_millis(10), Duration::from_millis(20));
            assert!(d >= Duration::from_millis(10) && d <= Duration::from_millis(20));
        }
        assert_eq!(r.between(4, 4), 4);
        assert_eq!(r.below(0), 0);
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
        assert_eq!(r.pick::<u8>(&[]), None);
    }

    #[test]
    fn chance_is_roughly_fair() {
        let mut r = SimRng::new(42, 3);
        let hits = (0..100_000).filter(|_| r.chance(0.25)).count();
        assert!((23_000..27_000).contains(&hits), "{hits}");
    }
}
