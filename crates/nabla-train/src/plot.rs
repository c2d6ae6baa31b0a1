//! An SVG picture of a run, written by hand: two panels (loss and accuracy per epoch), each with the
//! training and validation curves, axes with ticks and labels, and a legend.

use crate::history::{History, write_text};
use nabla_core::Result;
use std::fmt::Write;
use std::path::Path;

const PANEL_W: f64 = 440.0;
const PANEL_H: f64 = 300.0;
const MARGIN_L: f64 = 60.0;
const MARGIN_R: f64 = 20.0;
const MARGIN_T: f64 = 40.0;
const MARGIN_B: f64 = 50.0;
const TRAIN_COLOR: &str = "#1f77b4";
const VAL_COLOR: &str = "#ff7f0e";

/// One curve: its legend label, colour and points `(epoch, value)`.
struct Series<'a> {
    label: &'a str,
    color: &'a str,
    points: Vec<(f64, f64)>,
}

/// About five "nice" tick values (1, 2 or 5 times a power of ten) enclosing `[lo, hi]`: the first
/// is at most `lo` and the last at least `hi`.
pub fn nice_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.5, lo + 0.5)
    };
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| raw <= *s)
        .unwrap_or(10.0 * mag);
    let first = (lo / step + 1e-9).floor() as i64;
    let last = (hi / step - 1e-9).ceil() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

/// A tick label: integers without decimals, others with as few as the step needs.
fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// Escapes text for SVG.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Draws one panel with its top-left corner at `(x0, 0)`, the legend in the top (or bottom) right.
fn panel(
    svg: &mut String,
    x0: f64,
    title: &str,
    y_label: &str,
    series: &[Series<'_>],
    legend_top: bool,
) {
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .filter(|(_, y)| y.is_finite())
        .collect();
    let (xmin, xmax) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    let (ymin, ymax) = all
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.1), b.max(p.1))
        });
    let (xmin, xmax) = if all.is_empty() {
        (0.0, 1.0)
    } else {
        (xmin, xmax)
    };
    let (ymin, ymax) = if all.is_empty() {
        (0.0, 1.0)
    } else {
        (ymin, ymax)
    };
    // The x axis spans the epochs (ticks inside it); the y axis spans its enclosing ticks.
    let (x_lo, x_hi) = (xmin, xmax.max(xmin + 1.0));
    let xticks: Vec<f64> = nice_ticks(x_lo, x_hi)
        .into_iter()
        .filter(|t| (x_lo - 1e-9..=x_hi + 1e-9).contains(t))
        .collect();
    let yticks = nice_ticks(ymin, ymax);
    let y_lo = yticks.first().copied().unwrap_or(ymin).min(ymin);
    let y_hi = yticks.last().copied().unwrap_or(ymax).max(ymax);
    let y_hi = if y_hi > y_lo { y_hi } else { y_lo + 1.0 };
    let (left, right) = (x0 + MARGIN_L, x0 + PANEL_W - MARGIN_R);
    let (top, bottom) = (MARGIN_T, PANEL_H - MARGIN_B);
    let sx = |x: f64| left + (x - x_lo) / (x_hi - x_lo) * (right - left);
    let sy = |y: f64| bottom - (y - y_lo) / (y_hi - y_lo) * (bottom - top);

    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        (left + right) / 2.0,
        escape(title)
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#444"/>"##,
        right - left,
        bottom - top
    );
    let xstep = if xticks.len() > 1 {
        xticks[1] - xticks[0]
    } else {
        1.0
    };
    for &t in &xticks {
        let x = sx(t);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{bottom:.1}" x2="{x:.1}" y2="{:.1}" stroke="#444"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
            bottom + 5.0,
            bottom + 18.0,
            tick_label(t, xstep)
        );
    }
    let ystep = if yticks.len() > 1 {
        yticks[1] - yticks[0]
    } else {
        1.0
    };
    for &t in &yticks {
        let y = sy(t);
        let _ = writeln!(
            svg,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{left:.1}" y2="{y:.1}" stroke="#444"/><line x1="{left:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
            left - 5.0,
            left - 8.0,
            y + 4.0,
            tick_label(t, ystep)
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">epoch</text>"#,
        (left + right) / 2.0,
        PANEL_H - 12.0
    );
    let (lx, ly) = (x0 + 16.0, (top + bottom) / 2.0);
    let _ = writeln!(
        svg,
        r#"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" font-size="12" transform="rotate(-90 {lx:.1} {ly:.1})">{}</text>"#,
        escape(y_label)
    );
    for (i, s) in series.iter().enumerate() {
        let pts: Vec<String> = s
            .points
            .iter()
            .filter(|(_, y)| y.is_finite())
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
            pts.join(" "),
            s.color
        );
        for p in &pts {
            if let Some((x, y)) = p.split_once(',') {
                let _ = writeln!(
                    svg,
                    r#"<circle cx="{x}" cy="{y}" r="2.5" fill="{}"/>"#,
                    s.color
                );
            }
        }
        // Legend entry, inside the plot area on the right.
        let ey = if legend_top {
            top + 14.0 + 16.0 * i as f64
        } else {
            bottom - 10.0 - 16.0 * (series.len() - 1 - i) as f64
        };
        let ex = right - 110.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{ex:.1}" y1="{ey:.1}" x2="{:.1}" y2="{ey:.1}" stroke="{}" stroke-width="2"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            ex + 20.0,
            s.color,
            ex + 26.0,
            ey + 4.0,
            escape(s.label)
        );
    }
}

/// The SVG document for `history`: loss on the left, accuracy on the right; validation curves
/// appear when the history has validation values.
pub fn render_svg(history: &History, title: &str) -> String {
    let series =
        |label: &'static str, color: &'static str, f: &dyn Fn(usize) -> Option<f64>| Series {
            label,
            color,
            points: history
                .epochs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| f(i).map(|v| (r.epoch as f64, v)))
                .collect(),
        };
    let e = &history.epochs;
    let loss = [
        series("train", TRAIN_COLOR, &|i| Some(e[i].train_loss)),
        series("validation", VAL_COLOR, &|i| e[i].val_loss),
    ];
    let acc = [
        series("train", TRAIN_COLOR, &|i| Some(e[i].train_accuracy)),
        series("validation", VAL_COLOR, &|i| e[i].val_accuracy),
    ];
    let mut svg = format!(
        r#"{open}
<title>{t}</title>
<rect width="100%" height="100%" fill="white"/>
"#,
        open = open_tag(),
        t = escape(title)
    );
    // Losses fall and accuracies rise: each legend goes where its curves usually are not.
    panel(
        &mut svg,
        0.0,
        &format!("{title}: loss"),
        "loss",
        &loss,
        true,
    );
    let acc_title = format!("{title}: accuracy");
    panel(&mut svg, PANEL_W, &acc_title, "accuracy", &acc, false);
    svg.push_str("</svg>\n");
    svg
}

/// The first line of every plot: the opening tag of the `<svg>` element.
fn open_tag() -> String {
    let (width, h) = (2.0 * PANEL_W, PANEL_H);
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" viewBox="0 0 {width} {h}" font-family="sans-serif">"#
    )
}

/// Whether `text`, the start of a file, starts as [`render_svg`] starts every plot.
pub(crate) fn is_plot(text: &str) -> bool {
    let mut lines = text.lines();
    lines.next() == Some(open_tag().as_str())
        && lines.next().is_some_and(|l| l.starts_with("<title>"))
}

/// Writes [`render_svg`]'s picture to `path`, atomically; a `path` that is a symbolic link is an
/// error.
pub fn write_svg(history: &History, title: &str, path: impl AsRef<Path>) -> Result<()> {
    write_text(path.as_ref(), &render_svg(history, title))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::EpochRecord;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = nice_ticks(0.93, 0.99);
        assert!(t.len() >= 3 && t[0] <= 0.93 && *t.last().unwrap_or(&0.0) >= 0.99);
        assert_eq!(nice_ticks(0.01, 0.83).len(), 6); // 0, 0.2, ..., 1.0
        assert!(!nice_ticks(1.0, 1.0).is_empty());
        assert_eq!(tick_label(0.25, 0.05), "0.25");
        assert_eq!(tick_label(4.0, 2.0), "4");
    }

    #[test]
    fn svg_has_two_panels_curves_and_legend() {
        let h = History {
            epochs: (1..=3)
                .map(|e| EpochRecord {
                    epoch: e,
                    step: e,
                    lr: 0.1,
                    train_loss: 1.0 / e as f64,
                    train_accuracy: 0.5 + 0.1 * e as f64,
                    val_loss: Some(1.2 / e as f64),
                    val_accuracy: Some(0.45 + 0.1 * e as f64),
                    val_top_k_accuracy: None,
                    seconds: 1.0,
                    examples_per_sec: 1.0,
                })
                .collect(),
        };
        let svg = render_svg(&h, "a <test>");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(svg.matches(">validation</text>").count(), 2);
        assert!(svg.contains(">epoch</text>") && svg.contains("a &lt;test&gt;: loss"));
        // An empty history still gives a valid picture.
        assert!(render_svg(&History::default(), "x").contains("</svg>"));
        assert!(is_plot(&svg) && is_plot(&render_svg(&History::default(), "")));
        assert!(!is_plot("<svg>mine</svg>") && !is_plot(""));
    }
}
