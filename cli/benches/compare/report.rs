//! The comparison results as Markdown: per scenario, the setup, every command's figures, the
//! netmirror / reference ratios, and facts such as events seen or bytes per route.
//!
//! A row that could not be measured says why (`not available: ...`, `not run: ...`) instead of
//! holding a number: the report never shows a figure this run did not produce.

use std::fmt::Write as _;

use super::measure::{Figures, Latency, ratio};

/// What became of one side of a comparison.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Measured(Figures),
    /// Why there is no figure (`not available: ...`, `failed: ...`).
    Missing {
        label: String,
        why: String,
    },
}

impl Outcome {
    fn figures(&self) -> Option<&Figures> {
        match self {
            Outcome::Measured(figures) => Some(figures),
            Outcome::Missing { .. } => None,
        }
    }
}

/// netmirror against a reference tool on the same data.
#[derive(Debug, Clone)]
pub(crate) struct Comparison {
    pub(crate) case: String,
    pub(crate) netmirror: Outcome,
    pub(crate) reference: Outcome,
}

/// One scenario's results.
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    pub(crate) title: String,
    pub(crate) setup: Vec<String>,
    pub(crate) comparisons: Vec<Comparison>,
    pub(crate) facts: Vec<(String, String)>,
    /// Facts also shown in the summary.
    pub(crate) headlines: Vec<(String, String)>,
    pub(crate) latencies: Vec<Latency>,
    /// Why the whole scenario did not run, if it did not.
    pub(crate) skipped: Option<String>,
}

impl Section {
    pub(crate) fn new(title: &str) -> Self {
        Self {
            title: title.to_owned(),
            ..Self::default()
        }
    }

    pub(crate) fn setup(&mut self, line: impl Into<String>) {
        self.setup.push(line.into());
    }

    pub(crate) fn fact(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.facts.push((key.into(), value.into()));
    }

    /// A fact that the summary shows too.
    pub(crate) fn headline(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let (key, value) = (key.into(), value.into());
        self.headlines.push((key.clone(), value.clone()));
        self.facts.push((key, value));
    }
}

/// Every scenario's results.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) sections: Vec<Section>,
}

impl Report {
    /// The Markdown text: a summary of ratios, then each scenario in detail.
    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### Ratios at a glance (medians, row 1 / row 2)\n");
        let _ = writeln!(
            out,
            "Row 1 is netmirror's command, row 2 the reference tool's, unless the case says \
             otherwise (scenario 3 also compares a filtered query with a full load). Below \
             1.00 means netmirror (row 1) needs less.\n"
        );
        let _ = writeln!(out, "| scenario | case | wall | CPU | peak RSS |");
        let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: |");
        for section in &self.sections {
            if let Some(why) = &section.skipped {
                let _ = writeln!(out, "| {} | not run: {} | | | |", section.title, why);
                continue;
            }
            for cmp in &section.comparisons {
                let (wall, cpu, rss) = ratios(cmp);
                let _ = writeln!(
                    out,
                    "| {} | {} | {wall} | {cpu} | {rss} |",
                    section.title,
                    escape(&cmp.case)
                );
            }
        }
        out.push('\n');
        if self.sections.iter().any(|s| !s.headlines.is_empty()) {
            let _ = writeln!(out, "### Other headline figures\n");
            let _ = writeln!(out, "| scenario | figure | value |");
            let _ = writeln!(out, "| --- | --- | --- |");
            for section in &self.sections {
                for (key, value) in &section.headlines {
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} |",
                        section.title,
                        escape(key),
                        escape(value)
                    );
                }
            }
            out.push('\n');
        }
        for section in &self.sections {
            section.write(&mut out);
        }
        out
    }
}

impl Section {
    fn write(&self, out: &mut String) {
        let _ = writeln!(out, "### {}\n", self.title);
        if let Some(why) = &self.skipped {
            let _ = writeln!(out, "Not run: {why}.\n");
            return;
        }
        for line in &self.setup {
            let _ = writeln!(out, "- {line}");
        }
        if !self.setup.is_empty() {
            out.push('\n');
        }
        if !self.comparisons.is_empty() {
            let _ = writeln!(
                out,
                "| case | command | runs | wall ms median [min–max] | CPU ms (user+sys) | \
                 peak RSS MiB |"
            );
            let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: | ---: |");
            for cmp in &self.comparisons {
                for side in [&cmp.netmirror, &cmp.reference] {
                    match side {
                        Outcome::Measured(f) => {
                            let _ = writeln!(
                                out,
                                "| {} | `{}` | {} | {} | {} | {} |",
                                escape(&cmp.case),
                                escape(&f.label),
                                f.runs,
                                f.wall_ms.show(1),
                                f.cpu_ms.show(1),
                                f.rss_mib.show(1)
                            );
                        }
                        Outcome::Missing { label, why } => {
                            let _ = writeln!(
                                out,
                                "| {} | `{}` | 0 | {} | | |",
                                escape(&cmp.case),
                                escape(label),
                                escape(why)
                            );
                        }
                    }
                }
                let (wall, cpu, rss) = ratios(cmp);
                let _ = writeln!(
                    out,
                    "| {} | ratio (row 1 / row 2) | | {} | {} | {} |",
                    escape(&cmp.case),
                    bold(&wall),
                    bold(&cpu),
                    bold(&rss)
                );
            }
            out.push('\n');
        }
        if !self.latencies.is_empty() {
            let _ = writeln!(
                out,
                "| round trip | calls | p50 µs | p99 µs | min µs | max µs |"
            );
            let _ = writeln!(out, "| --- | ---: | ---: | ---: | ---: | ---: |");
            for lat in &self.latencies {
                let _ = writeln!(
                    out,
                    "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                    escape(&lat.label),
                    lat.n,
                    lat.p50_us,
                    lat.p99_us,
                    lat.min_us,
                    lat.max_us
                );
            }
            out.push('\n');
        }
        if !self.facts.is_empty() {
            let _ = writeln!(out, "| measured | value |");
            let _ = writeln!(out, "| --- | --- |");
            for (key, value) in &self.facts {
                let _ = writeln!(out, "| {} | {} |", escape(key), escape(value));
            }
            out.push('\n');
        }
    }
}

/// The three ratios of a comparison's medians, or why there are none.
fn ratios(cmp: &Comparison) -> (String, String, String) {
    match (cmp.netmirror.figures(), cmp.reference.figures()) {
        (Some(a), Some(b)) => (
            ratio(a.wall_ms.median, b.wall_ms.median),
            ratio(a.cpu_ms.median, b.cpu_ms.median),
            ratio(a.rss_mib.median, b.rss_mib.median),
        ),
        _ => {
            let why = match (&cmp.netmirror, &cmp.reference) {
                (Outcome::Missing { why, .. }, _) | (_, Outcome::Missing { why, .. }) => {
                    why.clone()
                }
                _ => String::new(),
            };
            (escape(&why), String::new(), String::new())
        }
    }
}

/// `**text**`, or nothing for no text.
fn bold(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!("**{text}**")
    }
}

/// Makes text safe inside a Markdown table cell.
pub(crate) fn escape(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}
