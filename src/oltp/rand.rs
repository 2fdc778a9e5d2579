//! The random rules of the TPC-C specification (clauses 2.1.6 and 4.3.2):
//! uniform integers, NURand with its per-run constants C (C_LOAD for C_LAST
//! at load, C_RUN at run obeying the 2.1.6.1 delta rule), a-strings and
//! n-strings, customer last names from syllables, zip codes, "ORIGINAL"
//! data, credit ratings and the O_C_ID permutation. One seeded
//! Xoshiro256PlusPlus per thread: the same seed gives the same database and
//! the same inputs.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The ten syllables of C_LAST (clause 4.3.2.3).
pub const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

/// Characters of a-strings: letters and digits.
const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The run's NURand constants C (clause 2.1.6), chosen once per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NuConstants {
    /// C for C_LAST (A = 255).
    pub c_last: u32,
    /// C for C_ID (A = 1023).
    pub c_id: u32,
    /// C for OL_I_ID (A = 8191).
    pub ol_i_id: u32,
}

impl NuConstants {
    /// The constants of the load: C_LOAD for C_LAST.
    pub fn for_load(seed: u64) -> NuConstants {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0xC0A5_7A47);
        NuConstants {
            c_last: r.random_range(0..=255),
            c_id: r.random_range(0..=1023),
            ol_i_id: r.random_range(0..=8191),
        }
    }

    /// The constants of a run against a database loaded with `load`:
    /// C_RUN for C_LAST with |C_RUN - C_LOAD| in 65..=119, not 96 nor 112
    /// (2.1.6.1); C_ID and OL_I_ID keep their load values (allowed: they
    /// may be the same at load and run).
    pub fn for_run(load: NuConstants, seed: u64) -> NuConstants {
        let mut r = Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5EED_C0DE);
        loop {
            let c: u32 = r.random_range(0..=255);
            if valid_run_delta(load.c_last, c) {
                return NuConstants { c_last: c, ..load };
            }
        }
    }
}

/// Whether C_RUN is allowed for C_LOAD (clause 2.1.6.1).
pub fn valid_run_delta(c_load: u32, c_run: u32) -> bool {
    let d = c_load.abs_diff(c_run);
    (65..=119).contains(&d) && d != 96 && d != 112
}

/// A thread's random source with the spec's helpers.
pub struct TpccRng {
    pub r: Xoshiro256PlusPlus,
    pub c: NuConstants,
}

impl TpccRng {
    pub fn new(seed: u64, c: NuConstants) -> TpccRng {
        TpccRng {
            r: Xoshiro256PlusPlus::seed_from_u64(seed),
            c,
        }
    }

    /// Uniform in x..=y.
    #[inline]
    pub fn uniform(&mut self, x: u32, y: u32) -> u32 {
        self.r.random_range(x..=y)
    }

    /// NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
    pub fn nurand(&mut self, a: u32, x: u32, y: u32) -> u32 {
        let c = match a {
            255 => self.c.c_last,
            1023 => self.c.c_id,
            _ => self.c.ol_i_id,
        };
        (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x
    }

    /// A customer id for a transaction: NURand(1023, 1, 3000).
    pub fn customer_id(&mut self) -> u32 {
        self.nurand(1023, 1, 3000)
    }

    /// An item id for a transaction: NURand(8191, 1, 100000).
    pub fn item_id(&mut self) -> u32 {
        self.nurand(8191, 1, 100_000)
    }

    /// A last name for a transaction: number NURand(255, 0, 999).
    pub fn last_name_run(&mut self) -> String {
        last_name(self.nurand(255, 0, 999))
    }

    /// Random alphanumeric string of length lo..=hi (an a-string).
    pub fn astring(&mut self, lo: usize, hi: usize) -> String {
        let n = self.r.random_range(lo..=hi);
        let bytes = (0..n)
            .map(|_| ALNUM[self.r.random_range(0..ALNUM.len())])
            .collect();
        String::from_utf8(bytes).expect("ASCII")
    }

    /// Random digit string of length lo..=hi (an n-string).
    pub fn nstring(&mut self, lo: usize, hi: usize) -> String {
        let n = self.r.random_range(lo..=hi);
        let bytes = (0..n)
            .map(|_| b'0' + self.r.random_range(0..10u8))
            .collect();
        String::from_utf8(bytes).expect("ASCII")
    }

    /// A zip code: 4 random digits then "11111".
    pub fn zip(&mut self) -> String {
        let mut z = self.nstring(4, 4);
        z.push_str("11111");
        z
    }

    /// I_DATA / S_DATA: an a-string of 26..50, 10% with "ORIGINAL" at a
    /// random position.
    pub fn data_with_original(&mut self) -> String {
        let mut s = self.astring(26, 50);
        if self.uniform(1, 100) <= 10 {
            let at = self.r.random_range(0..=s.len() - 8);
            s.replace_range(at..at + 8, "ORIGINAL");
        }
        s
    }

    /// C_CREDIT: "BC" 10% of the time, else "GC".
    pub fn credit(&mut self) -> &'static str {
        if self.uniform(1, 100) <= 10 {
            "BC"
        } else {
            "GC"
        }
    }

    /// A fixed-point amount lo..=hi in hundredths (e.g. 1.00..100.00 as
    /// 100..=10000), as a number with two decimals.
    pub fn money(&mut self, lo_cents: u32, hi_cents: u32) -> f64 {
        self.uniform(lo_cents, hi_cents) as f64 / 100.0
    }

    /// A tax or discount rate lo..=hi in ten-thousandths.
    pub fn rate(&mut self, lo: u32, hi: u32) -> f64 {
        self.uniform(lo, hi) as f64 / 10_000.0
    }

    /// A random permutation of 1..=n (O_C_ID at load).
    pub fn permutation(&mut self, n: u32) -> Vec<u32> {
        let mut v: Vec<u32> = (1..=n).collect();
        for i in (1..v.len()).rev() {
            let j = self.r.random_range(0..=i);
            v.swap(i, j);
        }
        v
    }

    /// Negative exponential with `mean_s`, truncated at 10x the mean
    /// (think times, clause 5.2.5.4).
    pub fn think_time_s(&mut self, mean_s: f64) -> f64 {
        let u: f64 = self.r.random_range(f64::MIN_POSITIVE..1.0);
        (-u.ln() * mean_s).min(10.0 * mean_s)
    }
}

/// C_LAST of number 0..=999: the syllables of its three digits.
pub fn last_name(n: u32) -> String {
    let n = n.min(999) as usize;
    let mut s = String::with_capacity(15);
    s.push_str(SYLLABLES[n / 100]);
    s.push_str(SYLLABLES[(n / 10) % 10]);
    s.push_str(SYLLABLES[n % 10]);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_from_syllables() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
    }

    #[test]
    fn nurand_stays_in_range() {
        for seed in 0..20 {
            let c = NuConstants::for_load(seed);
            let mut r = TpccRng::new(seed, c);
            for _ in 0..2000 {
                assert!((0..=999).contains(&r.nurand(255, 0, 999)));
                assert!((1..=3000).contains(&r.customer_id()));
                assert!((1..=100_000).contains(&r.item_id()));
            }
        }
    }

    #[test]
    fn run_constant_obeys_the_delta_rule() {
        for seed in 0..500 {
            let load = NuConstants::for_load(seed);
            let run = NuConstants::for_run(load, seed);
            let d = load.c_last.abs_diff(run.c_last);
            assert!((65..=119).contains(&d) && d != 96 && d != 112, "{d}");
            assert!(run.c_last <= 255);
        }
        assert!(!valid_run_delta(0, 96));
        assert!(!valid_run_delta(200, 88));
        assert!(valid_run_delta(10, 75));
        assert!(!valid_run_delta(10, 74));
    }

    #[test]
    fn strings_have_their_shapes() {
        let mut r = TpccRng::new(1, NuConstants::for_load(1));
        let mut originals = 0;
        for _ in 0..2000 {
            let s = r.astring(26, 50);
            assert!((26..=50).contains(&s.len()));
            assert!(s.bytes().all(|b| b.is_ascii_alphanumeric()));
            let z = r.zip();
            assert_eq!(z.len(), 9);
            assert!(z.ends_with("11111"));
            let d = r.data_with_original();
            originals += d.contains("ORIGINAL") as u32;
        }
        assert!((100..=300).contains(&originals), "{originals}");
        let mut p = r.permutation(3000);
        p.sort_unstable();
        assert_eq!(p, (1..=3000).collect::<Vec<_>>());
    }
}
