//! Interleaved measurement (BENCHMARKS.md, section 1): criterion measures
//! one side, then the other, seconds apart, and the machine's load moves
//! between them; rounds of each side in turn (ABBA) see the same load.
//!
//! Uses nothing but `std`, so that another crate's bench can include this
//! file with `#[path]`.

use std::time::Duration;

/// Whether to run a bench's interleaved measurements (only when
/// benchmarking): `var` (`0` or `1`) if set, or else, unless criterion
/// only tests, lists or profiles, when its filter (its one positional
/// argument) is absent or part of `name`.
pub fn paired_wanted(var: &str, name: &str) -> bool {
    if let Ok(v) = std::env::var(var) {
        return v != "0";
    }
    // Criterion's options that take a value, as `--opt value`.
    const WITH_VALUE: [&str; 19] = [
        "--sample-size",
        "--warm-up-time",
        "--measurement-time",
        "--nresamples",
        "--noise-threshold",
        "--confidence-level",
        "--significance-level",
        "--save-baseline",
        "-s",
        "--baseline",
        "-b",
        "--baseline-lenient",
        "--load-baseline",
        "--profile-time",
        "--output-format",
        "--color",
        "-c",
        "--format",
        "--logfile",
    ];
    let args: Vec<String> = std::env::args().collect();
    if !args.iter().any(|a| a == "--bench") {
        return false;
    }
    // Criterion's modes that measure nothing (or profile).
    if args
        .iter()
        .any(|a| ["--test", "--list", "--profile-time"].contains(&a.as_str()))
    {
        return false;
    }
    let mut rest = args.iter().skip(1);
    let mut filter = None;
    while let Some(arg) = rest.next() {
        if WITH_VALUE.contains(&arg.as_str()) {
            rest.next();
        } else if !arg.starts_with('-') {
            filter = Some(arg);
        }
    }
    filter.is_none_or(|f| name.contains(f.as_str()))
}

/// The machine's load average (`/proc/loadavg`'s first three figures), to
/// print beside a measurement.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// What [`interleave`] measured: seconds per call of each side.
pub struct Paired {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
}

impl Paired {
    /// The mean of `v`.
    pub fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len() as f64
    }

    /// The median of `v` (the upper one of an even count).
    pub fn median(v: &[f64]) -> f64 {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// A / B of the mean times.
    pub fn ratio_of_means(&self) -> f64 {
        Self::mean(&self.a) / Self::mean(&self.b)
    }

    /// A / B of the median times.
    pub fn ratio_of_medians(&self) -> f64 {
        Self::median(&self.a) / Self::median(&self.b)
    }

    /// The median of each round's A / B.
    pub fn median_pair_ratio(&self) -> f64 {
        let ratios: Vec<f64> = self.a.iter().zip(&self.b).map(|(x, y)| x / y).collect();
        Self::median(&ratios)
    }
}

/// `rounds` rounds of `a` and `b` in turn, ABBA (A first in even rounds, B
/// first in odd ones), after `rounds / 10` untimed rounds of each as a
/// warm-up. Each call returns the time of one round and the calls it made.
pub fn interleave(
    rounds: usize,
    mut a: impl FnMut() -> (Duration, usize),
    mut b: impl FnMut() -> (Duration, usize),
) -> Paired {
    for _ in 0..rounds / 10 {
        a();
        b();
    }
    let per_call = |(d, n): (Duration, usize)| d.as_secs_f64() / n as f64;
    let (mut ta, mut tb) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for i in 0..rounds {
        if i % 2 == 0 {
            ta.push(per_call(a()));
            tb.push(per_call(b()));
        } else {
            tb.push(per_call(b()));
            ta.push(per_call(a()));
        }
    }
    Paired { a: ta, b: tb }
}
