//! The benchmark's table: each figure beside its reference, as a ratio, with its target.

/// One line of the report.
pub struct Row {
    pub figure: String,
    pub measured: String,
    pub reference: String,
    pub ratio: Option<f64>,
    /// The target and whether it was met.
    pub target: Option<(String, bool)>,
}

pub fn rate(value: f64, unit: &str) -> String {
    format!("{} {unit}", thousands(value))
}

pub fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 && c != '-' {
            out.push(',');
        }
        out.push(c);
    }
    out
}

pub fn print(rows: &[Row]) {
    let width = |f: &dyn Fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let (w1, w2, w3) = (
        width(&|r| r.figure.chars().count()),
        width(&|r| r.measured.chars().count()),
        width(&|r| r.reference.chars().count()),
    );
    println!(
        "{:<w1$}  {:>w2$}  {:<w3$}  {:>6}  target",
        "figure", "measured", "reference", "ratio"
    );
    for r in rows {
        let ratio = r.ratio.map(|x| format!("{x:.2}")).unwrap_or_default();
        let target = match &r.target {
            Some((t, true)) => format!("{t}  met"),
            Some((t, false)) => format!("{t}  NOT MET"),
            None => String::new(),
        };
        println!(
            "{:<w1$}  {:>w2$}  {:<w3$}  {:>6}  {target}",
            r.figure, r.measured, r.reference, ratio
        );
    }
}
