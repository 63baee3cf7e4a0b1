//! A criterion measurement of the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`,
//! through rustix's safe `clock_gettime`). On a machine shared with other work, wall time also
//! counts the time the thread waited for a CPU; CPU time does not.

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// Thread CPU time in nanoseconds.
pub struct ThreadCpuTime;

fn now() -> u64 {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let secs = u64::try_from(time.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(time.tv_nsec).unwrap_or(0);
    secs * 1_000_000_000 + nanos
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        now()
    }

    fn end(&self, start: u64) -> u64 {
        now().saturating_sub(start)
    }

    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

/// Formats nanoseconds of CPU time like criterion formats wall time.
struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical < 1e3 {
            (1.0, "ns cpu")
        } else if typical < 1e6 {
            (1e-3, "µs cpu")
        } else if typical < 1e9 {
            (1e-6, "ms cpu")
        } else {
            (1e-9, "s cpu")
        };
        values.iter_mut().for_each(|value| *value *= factor);
        unit
    }

    fn scale_throughputs(
        &self,
        typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per_iteration = match throughput {
            Throughput::Elements(n) | Throughput::ElementsAndBytes { elements: n, .. } => *n as f64,
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => *n as f64,
            Throughput::Bits(n) => *n as f64,
        };
        let per_second = per_iteration * 1e9 / typical;
        let (factor, unit) = if per_second < 1e3 {
            (1.0, "elem/s cpu")
        } else if per_second < 1e6 {
            (1e-3, "Kelem/s cpu")
        } else {
            (1e-6, "Melem/s cpu")
        };
        values
            .iter_mut()
            .for_each(|value| *value = per_iteration * 1e9 / *value * factor);
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}
