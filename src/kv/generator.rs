//! YCSB's number generators (site.ycsb.generator), ported faithfully.
//!
//! Each generator draws from a caller-supplied `rand::Rng` so a worker's
//! seeded PRNG drives it and tests can plug in a known source. Uniform
//! doubles are `(next_u64 >> 11) * 2^-53` (Java's `nextDouble` has the same
//! 53-bit resolution); YCSB's `Math.abs(nextLong()) % n` is kept as is,
//! modulo bias included. Differences from the Java code: the constructors do
//! not draw a first value (Java's do, which only advances its RNG), and
//! ScrambledZipfian uses 10^10 items, the count YCSB's precomputed zeta
//! constant 26.46902820178302 belongs to (later YCSB versions raised
//! ITEM_COUNT to 10^16 but kept that constant).

use rand::Rng;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use super::keys::fnvhash64;

/// YCSB's default zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// ScrambledZipfian's item space (YCSB's original ITEM_COUNT).
pub const SCRAMBLED_ITEM_COUNT: i64 = 10_000_000_000;
/// zeta(10^10, 0.99), precomputed by YCSB (`ScrambledZipfianGenerator.ZETAN`).
pub const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// A uniform double in [0, 1) with 53 bits of resolution.
#[inline]
pub fn unit_f64<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Java's `Math.abs(random.nextLong())` (wraps for `Long.MIN_VALUE`).
#[inline]
fn abs_long<R: Rng + ?Sized>(rng: &mut R) -> i64 {
    (rng.next_u64() as i64).wrapping_abs()
}

/// Java's `%` on longs: the sign follows the dividend.
#[inline]
fn java_rem(a: i64, b: i64) -> i64 {
    a.wrapping_rem(b)
}

/// `ZipfianGenerator.zetastatic(st, n, theta, initialsum)`: the sum of
/// 1/(i+1)^theta for i in st..n, added to `initial`, summed in order.
pub fn zeta_range(st: i64, n: i64, theta: f64, initial: f64) -> f64 {
    let mut sum = initial;
    let mut i = st;
    while i < n {
        sum += 1.0 / ((i + 1) as f64).powf(theta);
        i += 1;
    }
    sum
}

/// zeta(n, theta) = sum_{i=1..n} i^-theta. Exact (YCSB's loop) up to 10^7
/// items; above that the first 10^6 terms are summed exactly and the tail
/// by Euler-Maclaurin (relative error < 1e-12), because the exact loop over
/// 10^10 items takes minutes. Checked against YCSB's zeta(10^10, 0.99).
pub fn zeta(n: i64, theta: f64) -> f64 {
    const EXACT: i64 = 10_000_000;
    if n <= EXACT {
        return zeta_range(0, n, theta, 0.0);
    }
    let m: i64 = 1_000_000;
    let head = zeta_range(0, m, theta, 0.0);
    let f = |x: f64| x.powf(-theta);
    let df = |x: f64| -theta * x.powf(-theta - 1.0);
    let d3f = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
    let a = (m + 1) as f64;
    let b = n as f64;
    let integral = if (theta - 1.0).abs() < 1e-15 {
        (b / a).ln()
    } else {
        (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
    };
    let tail = integral + (f(a) + f(b)) / 2.0 + (df(b) - df(a)) / 12.0 - (d3f(b) - d3f(a)) / 720.0;
    head + tail
}

/// Gray et al.'s zipfian generator over [base, base + items), as YCSB's
/// `ZipfianGenerator` (item 0 most popular). `next_for(itemcount)` grows
/// zeta incrementally when the item count grows (used by Latest).
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: i64,
    base: i64,
    theta: f64,
    zeta2theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    countforzeta: i64,
}

impl Zipfian {
    /// Items `min..=max` with constant `theta`, zeta computed.
    pub fn new(min: i64, max: i64, theta: f64) -> Zipfian {
        let items = max - min + 1;
        Zipfian::with_zetan(min, max, theta, zeta(items, theta))
    }

    /// Items `min..=max` with a precomputed zeta(n, theta).
    pub fn with_zetan(min: i64, max: i64, theta: f64, zetan: f64) -> Zipfian {
        let items = max - min + 1;
        let zeta2theta = zeta_range(0, 2, theta, 0.0);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2theta / zetan);
        Zipfian {
            items,
            base: min,
            theta,
            zeta2theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            countforzeta: items,
        }
    }

    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// The value for one uniform draw `u` (Gray et al.).
    #[inline]
    pub fn value_for(&self, u: f64, itemcount: i64) -> i64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return self.base;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return self.base + 1;
        }
        self.base + (itemcount as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as i64
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> i64 {
        let n = self.items;
        self.next_for(rng, n)
    }

    /// `nextLong(itemcount)`: like YCSB, a larger count extends zeta
    /// incrementally (and eta keeps YCSB's use of the original `items`); a
    /// smaller count is used without recomputing (allowitemcountdecrease=false).
    pub fn next_for<R: Rng + ?Sized>(&mut self, rng: &mut R, itemcount: i64) -> i64 {
        if itemcount > self.countforzeta {
            self.zetan = zeta_range(self.countforzeta, itemcount, self.theta, self.zetan);
            self.countforzeta = itemcount;
            self.eta = (1.0 - (2.0 / self.items as f64).powf(1.0 - self.theta))
                / (1.0 - self.zeta2theta / self.zetan);
        }
        let u = unit_f64(rng);
        self.value_for(u, itemcount)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: zipfian over 10^10 items, the rank
/// FNV-hashed modulo the item count so popular keys are scattered.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    min: i64,
    itemcount: i64,
    gen: Zipfian,
}

impl ScrambledZipfian {
    pub fn new(min: i64, max: i64, theta: f64) -> ScrambledZipfian {
        // YCSB: new ZipfianGenerator(0, ITEM_COUNT, ...), i.e. ITEM_COUNT + 1 items.
        let gen = if theta == ZIPFIAN_CONSTANT {
            Zipfian::with_zetan(0, SCRAMBLED_ITEM_COUNT, theta, SCRAMBLED_ZETAN)
        } else {
            Zipfian::new(0, SCRAMBLED_ITEM_COUNT, theta)
        };
        ScrambledZipfian {
            min,
            itemcount: max - min + 1,
            gen,
        }
    }

    #[inline]
    pub fn value_for(&self, u: f64) -> i64 {
        let r = self.gen.value_for(u, self.gen.items);
        self.min + java_rem(fnvhash64(r), self.itemcount)
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        let u = unit_f64(rng);
        self.value_for(u)
    }
}

/// `UniformLongGenerator`: `abs(nextLong) % interval + lb`, inclusive bounds.
#[derive(Debug, Clone, Copy)]
pub struct UniformLong {
    lb: i64,
    interval: i64,
}

impl UniformLong {
    pub fn new(lb: i64, ub: i64) -> UniformLong {
        UniformLong {
            lb,
            interval: (ub - lb + 1).max(1),
        }
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        java_rem(abs_long(rng), self.interval) + self.lb
    }
}

/// `HotspotIntegerGenerator`: a fraction of operations hits a hot set at
/// the low end of [lb, ub]; both sets are drawn uniformly.
#[derive(Debug, Clone, Copy)]
pub struct Hotspot {
    lb: i64,
    hot_interval: i64,
    cold_interval: i64,
    hot_opn_fraction: f64,
}

impl Hotspot {
    pub fn new(lb: i64, ub: i64, hotset_fraction: f64, hot_opn_fraction: f64) -> Hotspot {
        let hs = if (0.0..=1.0).contains(&hotset_fraction) {
            hotset_fraction
        } else {
            0.0
        };
        let ho = if (0.0..=1.0).contains(&hot_opn_fraction) {
            hot_opn_fraction
        } else {
            0.0
        };
        let (lb, ub) = if lb > ub { (ub, lb) } else { (lb, ub) };
        let interval = ub - lb + 1;
        // YCSB casts through int: (int) (interval * hotsetFraction).
        let hot = (interval as f64 * hs) as i32 as i64;
        Hotspot {
            lb,
            hot_interval: hot,
            cold_interval: interval - hot,
            hot_opn_fraction: ho,
        }
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        if unit_f64(rng) < self.hot_opn_fraction && self.hot_interval > 0 {
            self.lb + java_rem(abs_long(rng), self.hot_interval)
        } else {
            self.lb + self.hot_interval + java_rem(abs_long(rng), self.cold_interval.max(1))
        }
    }
}

/// `ExponentialGenerator(percentile, range)`: gamma = -ln(1 - p/100) / range,
/// value = -ln(u) / gamma (an offset back from the latest insert).
#[derive(Debug, Clone, Copy)]
pub struct Exponential {
    gamma: f64,
}

impl Exponential {
    pub fn new(percentile: f64, range: f64) -> Exponential {
        Exponential {
            gamma: -(1.0 - percentile / 100.0).ln() / range,
        }
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        -unit_f64(rng).ln() / self.gamma
    }
}

/// `SequentialGenerator(start, end)`: start + counter++ % interval; shared by
/// all threads like YCSB's AtomicLong.
#[derive(Debug)]
pub struct Sequential {
    start: i64,
    interval: i64,
    counter: AtomicI64,
}

impl Sequential {
    pub fn new(start: i64, end: i64) -> Sequential {
        Sequential {
            start,
            interval: (end - start + 1).max(1),
            counter: AtomicI64::new(0),
        }
    }

    #[inline]
    pub fn next(&self) -> i64 {
        self.start + self.counter.fetch_add(1, Ordering::Relaxed) % self.interval
    }
}

/// `CounterGenerator`: a shared counter starting at `start`.
#[derive(Debug)]
pub struct Counter {
    next: AtomicI64,
}

impl Counter {
    pub fn new(start: i64) -> Counter {
        Counter {
            next: AtomicI64::new(start),
        }
    }

    #[inline]
    pub fn next(&self) -> i64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The last value handed out (`lastValue`).
    pub fn last(&self) -> i64 {
        self.next.load(Ordering::Relaxed) - 1
    }
}

/// Size of the window of pending acknowledgements (YCSB: 2^20).
const ACK_WINDOW: usize = 1 << 20;

/// `AcknowledgedCounterGenerator`: hands out counter values, but `last()`
/// only moves past a value once it and all before it were acknowledged
/// (the insert finished), so readers never pick a key not yet written.
#[derive(Debug)]
pub struct AcknowledgedCounter {
    counter: Counter,
    window: Box<[AtomicBool]>,
    limit: AtomicI64,
    lock: Mutex<()>,
}

/// Returned when more than 2^20 inserts are outstanding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooManyUnacknowledged;

impl AcknowledgedCounter {
    pub fn new(start: i64) -> AcknowledgedCounter {
        AcknowledgedCounter {
            counter: Counter::new(start),
            window: (0..ACK_WINDOW).map(|_| AtomicBool::new(false)).collect(),
            limit: AtomicI64::new(start - 1),
            lock: Mutex::new(()),
        }
    }

    #[inline]
    pub fn next(&self) -> i64 {
        self.counter.next()
    }

    /// The highest value below which everything has been acknowledged.
    #[inline]
    pub fn last(&self) -> i64 {
        self.limit.load(Ordering::Acquire)
    }

    /// Mark `value` as inserted; advance the limit over a contiguous run.
    pub fn acknowledge(&self, value: i64) -> Result<(), TooManyUnacknowledged> {
        let mask = (ACK_WINDOW - 1) as i64;
        let slot = (value & mask) as usize;
        if self.window[slot].swap(true, Ordering::AcqRel) {
            return Err(TooManyUnacknowledged);
        }
        if let Ok(_g) = self.lock.try_lock() {
            let limit = self.limit.load(Ordering::Acquire);
            let before_first = limit & mask;
            let mut index = limit + 1;
            while index != before_first {
                let s = (index & mask) as usize;
                if !self.window[s].load(Ordering::Acquire) {
                    break;
                }
                self.window[s].store(false, Ordering::Release);
                index += 1;
            }
            self.limit.store(index - 1, Ordering::Release);
        }
        Ok(())
    }
}

/// `SkewedLatestGenerator`: max - zipfian(max), where max is the last
/// acknowledged insert, so the newest records are the most popular.
#[derive(Debug, Clone)]
pub struct SkewedLatest {
    zipfian: Zipfian,
}

impl SkewedLatest {
    /// `last` is the basis counter's last value at construction time.
    pub fn new(last: i64, theta: f64) -> SkewedLatest {
        SkewedLatest {
            zipfian: Zipfian::new(0, last.max(1) - 1, theta),
        }
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R, basis: &AcknowledgedCounter) -> i64 {
        let max = basis.last();
        max - self.zipfian.next_for(rng, max.max(1))
    }
}

/// `DiscreteGenerator`: picks one of several weighted choices.
#[derive(Debug, Clone)]
pub struct Discrete<T: Copy> {
    values: Vec<(f64, T)>,
    sum: f64,
}

impl<T: Copy> Discrete<T> {
    pub fn new() -> Discrete<T> {
        Discrete {
            values: Vec::new(),
            sum: 0.0,
        }
    }

    pub fn add(&mut self, weight: f64, value: T) {
        self.values.push((weight, value));
        self.sum += weight;
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> Option<T> {
        let mut val = unit_f64(rng);
        for &(w, v) in &self.values {
            let p = w / self.sum;
            if val < p {
                return Some(v);
            }
            val -= p;
        }
        self.values.last().map(|&(_, v)| v)
    }
}

impl<T: Copy> Default for Discrete<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::convert::Infallible;

    /// SplitMix64, the known uniform source of bench/kv_generators_reference.py.
    pub(crate) struct SplitMix64(pub u64);

    impl rand::TryRng for SplitMix64 {
        type Error = Infallible;
        fn try_next_u32(&mut self) -> Result<u32, Infallible> {
            Ok((self.try_next_u64()? >> 32) as u32)
        }
        fn try_next_u64(&mut self) -> Result<u64, Infallible> {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            Ok(z ^ (z >> 31))
        }
        fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
            for b in dst {
                *b = self.try_next_u64()? as u8;
            }
            Ok(())
        }
    }

    #[test]
    fn splitmix_matches_reference() {
        assert_eq!(SplitMix64(42).next_u64(), 13_679_457_532_755_275_413);
    }

    // Expected values: python3 bench/kv_generators_reference.py
    #[test]
    fn zeta_values() {
        assert_eq!(zeta(2, 0.99), 1.503_477_775_028_359_4);
        assert_eq!(zeta(1000, 0.99), 7.728_953_217_284_729);
        assert_eq!(zeta(10000, 0.5), 198.544_645_449_524_1);
    }

    #[test]
    fn zeta_approximation_matches_ycsb_constant() {
        let z = zeta(SCRAMBLED_ITEM_COUNT, 0.99);
        assert!((z - SCRAMBLED_ZETAN).abs() / SCRAMBLED_ZETAN < 1e-9, "{z}");
    }

    #[test]
    fn zipfian_seeded_sequences() {
        let mut z = Zipfian::new(0, 999, 0.99);
        let mut r = SplitMix64(42);
        let got: Vec<i64> = (0..10).map(|_| z.next(&mut r)).collect();
        assert_eq!(got, vec![141, 1, 3, 6, 0, 371, 2, 222, 6, 55]);
        let mut z = Zipfian::new(0, 999, 0.5);
        let mut r = SplitMix64(7);
        let got: Vec<i64> = (0..10).map(|_| z.next(&mut r)).collect();
        assert_eq!(got, vec![160, 1, 814, 348, 213, 68, 227, 115, 22, 179]);
    }

    #[test]
    fn scrambled_zipfian_seeded_sequence() {
        let s = ScrambledZipfian::new(0, 999, ZIPFIAN_CONSTANT);
        let mut r = SplitMix64(42);
        let got: Vec<i64> = (0..10).map(|_| s.next(&mut r)).collect();
        assert_eq!(got, vec![525, 672, 457, 304, 620, 728, 144, 579, 8, 472]);
    }

    #[test]
    fn bounded_generators_stay_in_range() {
        let mut r = SplitMix64(1);
        let u = UniformLong::new(10, 19);
        let h = Hotspot::new(0, 99, 0.2, 0.8);
        let s = ScrambledZipfian::new(100, 199, ZIPFIAN_CONSTANT);
        let mut hot = 0;
        for _ in 0..10_000 {
            assert!((10..=19).contains(&u.next(&mut r)));
            let v = h.next(&mut r);
            assert!((0..=99).contains(&v));
            if v < 20 {
                hot += 1;
            }
            assert!((100..=199).contains(&s.next(&mut r)));
        }
        // 80% of operations hit the hot 20% (plus the cold share of it: none).
        assert!((7_500..8_500).contains(&hot), "{hot}");
    }

    #[test]
    fn sequential_wraps_and_counter_counts() {
        let s = Sequential::new(5, 7);
        let v: Vec<i64> = (0..5).map(|_| s.next()).collect();
        assert_eq!(v, vec![5, 6, 7, 5, 6]);
        let c = Counter::new(10);
        assert_eq!(c.next(), 10);
        assert_eq!(c.next(), 11);
        assert_eq!(c.last(), 11);
    }

    #[test]
    fn acknowledged_counter_waits_for_gaps() {
        let c = AcknowledgedCounter::new(100);
        assert_eq!(c.last(), 99);
        let a = c.next();
        let b = c.next();
        c.acknowledge(b).unwrap();
        assert_eq!(c.last(), 99, "b acknowledged before a: limit must not move");
        c.acknowledge(a).unwrap();
        assert_eq!(c.last(), 101);
    }

    #[test]
    fn latest_favours_recent_and_exponential_is_skewed() {
        let c = AcknowledgedCounter::new(1000);
        let mut l = SkewedLatest::new(c.last(), ZIPFIAN_CONSTANT);
        let mut r = SplitMix64(3);
        let mut recent = 0;
        for _ in 0..10_000 {
            let v = l.next(&mut r, &c);
            assert!((0..=999).contains(&v));
            if v >= 990 {
                recent += 1;
            }
        }
        assert!(recent > 3_000, "{recent}");
        let e = Exponential::new(95.0, 100.0);
        let below = (0..10_000).filter(|_| e.next(&mut r) < 100.0).count();
        assert!((9_300..9_700).contains(&below), "{below}");
    }

    #[test]
    fn discrete_mix() {
        let mut d = Discrete::new();
        d.add(0.5, 'r');
        d.add(0.5, 'u');
        let mut r = SplitMix64(9);
        let reads = (0..10_000).filter(|_| d.next(&mut r) == Some('r')).count();
        assert!((4_800..5_200).contains(&reads), "{reads}");
    }
}
