//! Classification metrics: accuracy, top-k accuracy, and a confusion matrix with per-class precision,
//! recall and F1 and their macro averages.
//!
//! The tensor functions take logits (or any scores) `[N, C]` and `i64` labels `[N]`; the host
//! functions work on plain slices.
//!
//! ```
//! use nabla_train::metrics::ConfusionMatrix;
//! let mut cm = ConfusionMatrix::new(2);
//! for (actual, predicted) in [(0, 0), (0, 1), (1, 1), (1, 1)] {
//!     cm.add(actual, predicted)?;
//! }
//! assert_eq!(cm.accuracy(), 0.75);
//! assert_eq!(cm.class_metrics(1).precision, 2.0 / 3.0);
//! # Ok::<(), nabla_core::Error>(())
//! ```

use nabla_core::{Backend, DType, Error, Result};
use nabla_distributed::{Communicator, all_reduce_f64};
use nabla_tensor::Tensor;
use std::fmt;

/// Scores `[N, C]` and labels `[N]` copied to the host: `(scores row-major, N, C, labels)`.
pub fn scores_to_host<B: Backend>(
    scores: &Tensor<B>,
    labels: &Tensor<B>,
) -> Result<(Vec<f64>, usize, usize, Vec<i64>)> {
    const OP: &str = "metrics";
    let &[n, c] = scores.shape() else {
        return Err(Error::invalid(
            OP,
            format!("scores must be [N, C], got shape {:?}", scores.shape()),
        ));
    };
    if labels.shape() != [n] {
        return Err(Error::shapes(OP, scores.shape(), labels.shape())
            .with_hint("expected scores [N, C] and labels [N]"));
    }
    // Widened on the host: not every backend has float64 (wgpu has not).
    let host = scores.detach().to_host()?.to_f64_vec();
    let labels = labels.detach().cast(DType::I64)?.to_vec::<i64>()?;
    Ok((host, n, c, labels))
}

/// Whether entry `j` of `row` comes before entry `i` in the order in which classes are predicted:
/// the larger score first, NaN after every number, ties to the lower index.
fn ranks_before(row: &[f64], j: usize, i: usize) -> bool {
    let (a, b) = (row[j], row[i]);
    match (a.is_nan(), b.is_nan()) {
        (false, true) => true,
        (true, false) => false,
        (true, true) => j < i,
        (false, false) => a > b || (a == b && j < i),
    }
}

/// The class of the largest score in each row of `scores` (`n` rows of `c`); ties go to the lower
/// index, NaN never wins (a row of NaN gives class 0).
pub fn argmax_rows(scores: &[f64], c: usize) -> Vec<usize> {
    scores
        .chunks(c.max(1))
        .map(|row| {
            (0..row.len()).fold(
                0,
                |best, j| if ranks_before(row, j, best) { j } else { best },
            )
        })
        .collect()
}

/// How many rows of `scores` have their arg-max (see [`argmax_rows`]) at the label.
pub fn argmax_correct(scores: &[f64], c: usize, labels: &[i64]) -> usize {
    argmax_rows(scores, c)
        .iter()
        .zip(labels)
        .filter(|&(&p, &l)| p as i64 == l)
        .count()
}

/// How many rows have their label among the first `k` classes of the row ordered as
/// [`argmax_rows`] orders them (the larger score first, NaN after every number, ties to the lower
/// index): top-1 is exactly the arg-max, and top-k never falls below it. Out-of-range labels always
/// miss.
pub fn top_k_correct(scores: &[f64], c: usize, labels: &[i64], k: usize) -> usize {
    scores
        .chunks(c.max(1))
        .zip(labels)
        .filter(|(row, label)| {
            usize::try_from(**label)
                .ok()
                .filter(|&l| l < row.len())
                .is_some_and(|l| (0..row.len()).filter(|&j| ranks_before(row, j, l)).count() < k)
        })
        .count()
}

/// The fraction of rows of `scores` `[N, C]` whose largest score is at the label (0 for `N = 0`).
pub fn accuracy<B: Backend>(scores: &Tensor<B>, labels: &Tensor<B>) -> Result<f64> {
    let (host, n, c, labels) = scores_to_host(scores, labels)?;
    Ok(ratio(argmax_correct(&host, c, &labels), n))
}

/// The fraction of rows whose label is among the `k` largest scores (see [`top_k_correct`]).
pub fn top_k_accuracy<B: Backend>(scores: &Tensor<B>, labels: &Tensor<B>, k: usize) -> Result<f64> {
    if k == 0 {
        return Err(Error::invalid("top_k_accuracy", "k must be at least 1"));
    }
    let (host, n, c, labels) = scores_to_host(scores, labels)?;
    Ok(ratio(top_k_correct(&host, c, &labels, k), n))
}

/// `num / den`, 0 when `den` is 0.
pub(crate) fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// Precision, recall and F1 of one class (or their macro averages), with the class's support.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassMetrics {
    /// True positives over predicted positives (0 when nothing was predicted as the class).
    pub precision: f64,
    /// True positives over actual positives (0 when the class never occurs).
    pub recall: f64,
    /// Harmonic mean of precision and recall (0 when both are 0).
    pub f1: f64,
    /// How many examples actually belong to the class (the total, for averages).
    pub support: u64,
}

/// A confusion matrix: `counts[actual][predicted]` over `classes` classes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfusionMatrix {
    classes: usize,
    counts: Vec<u64>,
}

impl ConfusionMatrix {
    /// An empty matrix for `classes` classes.
    pub fn new(classes: usize) -> Self {
        ConfusionMatrix {
            classes,
            counts: vec![0; classes * classes],
        }
    }

    /// The number of classes.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// Counts one example of class `actual` predicted as `predicted`.
    pub fn add(&mut self, actual: usize, predicted: usize) -> Result<()> {
        if actual >= self.classes || predicted >= self.classes {
            return Err(Error::invalid(
                "ConfusionMatrix::add",
                format!(
                    "classes must lie in 0..{}, got actual {actual}, predicted {predicted}",
                    self.classes
                ),
            ));
        }
        self.counts[actual * self.classes + predicted] += 1;
        Ok(())
    }

    /// Counts a batch of scores `[N, C]` (the prediction is the arg-max) against labels `[N]`.
    pub fn update<B: Backend>(&mut self, scores: &Tensor<B>, labels: &Tensor<B>) -> Result<()> {
        let (host, _, c, labels) = scores_to_host(scores, labels)?;
        self.update_host(&host, c, &labels)
    }

    /// Counts host scores (rows of `c`) against labels.
    pub fn update_host(&mut self, scores: &[f64], c: usize, labels: &[i64]) -> Result<()> {
        for (p, &l) in argmax_rows(scores, c).into_iter().zip(labels) {
            let actual = usize::try_from(l).map_err(|_| {
                Error::invalid(
                    "ConfusionMatrix::update",
                    format!("labels must be non-negative class indices, got {l}"),
                )
            })?;
            self.add(actual, p)?;
        }
        Ok(())
    }

    /// Examples of class `actual` predicted as `predicted` (0 outside the matrix).
    pub fn get(&self, actual: usize, predicted: usize) -> u64 {
        if actual < self.classes && predicted < self.classes {
            self.counts[actual * self.classes + predicted]
        } else {
            0
        }
    }

    /// All counted examples.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The fraction on the diagonal (0 when empty).
    pub fn accuracy(&self) -> f64 {
        let correct: u64 = (0..self.classes).map(|i| self.get(i, i)).sum();
        ratio(correct as usize, self.total() as usize)
    }

    /// Precision, recall, F1 and support of class `class`.
    pub fn class_metrics(&self, class: usize) -> ClassMetrics {
        let tp = self.get(class, class);
        let predicted: u64 = (0..self.classes).map(|a| self.get(a, class)).sum();
        let support: u64 = (0..self.classes).map(|p| self.get(class, p)).sum();
        let precision = ratio(tp as usize, predicted as usize);
        let recall = ratio(tp as usize, support as usize);
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        ClassMetrics {
            precision,
            recall,
            f1,
            support,
        }
    }

    /// The unweighted means of the per-class precision, recall and F1 (scikit-learn's `macro`
    /// average, over all classes), with the total support.
    pub fn macro_average(&self) -> ClassMetrics {
        let per: Vec<ClassMetrics> = (0..self.classes).map(|c| self.class_metrics(c)).collect();
        let mean = |f: fn(&ClassMetrics) -> f64| {
            if per.is_empty() {
                0.0
            } else {
                per.iter().map(f).sum::<f64>() / per.len() as f64
            }
        };
        ClassMetrics {
            precision: mean(|m| m.precision),
            recall: mean(|m| m.recall),
            f1: mean(|m| m.f1),
            support: self.total(),
        }
    }

    /// A per-class precision/recall/F1 table with the macro average, like scikit-learn's
    /// `classification_report`.
    pub fn report(&self) -> String {
        let mut out = format!(
            "{:>9} {:>9} {:>9} {:>9} {:>9}\n",
            "class", "precision", "recall", "f1", "support"
        );
        let row = |name: &str, m: ClassMetrics| {
            format!(
                "{name:>9} {:>9.4} {:>9.4} {:>9.4} {:>9}\n",
                m.precision, m.recall, m.f1, m.support
            )
        };
        for c in 0..self.classes {
            out.push_str(&row(&c.to_string(), self.class_metrics(c)));
        }
        out.push_str(&row("macro avg", self.macro_average()));
        out
    }
}

impl fmt::Display for ConfusionMatrix {
    /// Rows are actual classes, columns predicted ones.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .counts
            .iter()
            .map(|c| c.to_string().len())
            .max()
            .unwrap_or(1)
            .max(self.classes.to_string().len())
            .max(2);
        write!(f, "{:>8} |", "actual\\p")?;
        for p in 0..self.classes {
            write!(f, " {p:>width$}")?;
        }
        writeln!(f)?;
        for a in 0..self.classes {
            write!(f, "{a:>8} |")?;
            for p in 0..self.classes {
                write!(f, " {:>width$}", self.get(a, p))?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

/// Sums over batches: mean loss, accuracy, top-k accuracy and (optionally) a confusion matrix.
#[derive(Clone, Debug)]
pub struct MetricAccumulator {
    /// `k` of the top-k accuracy.
    pub top_k: usize,
    loss_sum: f64,
    examples: usize,
    correct: usize,
    top_k_correct: usize,
    confusion: Option<ConfusionMatrix>,
}

impl MetricAccumulator {
    /// An empty accumulator for top-`top_k` accuracy, keeping a confusion matrix when `classes` is
    /// given.
    pub fn new(top_k: usize, classes: Option<usize>) -> Self {
        MetricAccumulator {
            top_k,
            loss_sum: 0.0,
            examples: 0,
            correct: 0,
            top_k_correct: 0,
            confusion: classes.map(ConfusionMatrix::new),
        }
    }

    /// Adds a batch: its mean loss, scores `[N, C]` and labels `[N]`.
    pub fn add_batch<B: Backend>(
        &mut self,
        mean_loss: f64,
        scores: &Tensor<B>,
        labels: &Tensor<B>,
    ) -> Result<()> {
        let (host, n, c, labels) = scores_to_host(scores, labels)?;
        self.loss_sum += mean_loss * n as f64;
        self.examples += n;
        self.correct += argmax_correct(&host, c, &labels);
        self.top_k_correct += top_k_correct(&host, c, &labels, self.top_k);
        if let Some(cm) = &mut self.confusion {
            cm.update_host(&host, c, &labels)?;
        }
        Ok(())
    }

    /// Examples seen.
    pub fn examples(&self) -> usize {
        self.examples
    }

    /// The mean loss per example.
    pub fn loss(&self) -> f64 {
        if self.examples == 0 {
            0.0
        } else {
            self.loss_sum / self.examples as f64
        }
    }

    /// Top-1 accuracy (the arg-max is at the label).
    pub fn accuracy(&self) -> f64 {
        ratio(self.correct, self.examples)
    }

    /// Top-k accuracy.
    pub fn top_k_accuracy(&self) -> f64 {
        ratio(self.top_k_correct, self.examples)
    }

    /// The confusion matrix, when one is kept.
    pub fn confusion(&self) -> Option<&ConfusionMatrix> {
        self.confusion.as_ref()
    }

    /// The running sums as JSON (for checkpoints taken mid-epoch).
    pub(crate) fn sums(&self) -> [f64; 4] {
        [
            self.loss_sum,
            self.examples as f64,
            self.correct as f64,
            self.top_k_correct as f64,
        ]
    }

    /// Sums this accumulator over all ranks of `comm` (every rank must call it): each rank then
    /// holds the metrics of the examples all ranks saw.
    pub fn all_reduce(&mut self, comm: &dyn Communicator) -> Result<()> {
        if comm.world_size() == 1 {
            return Ok(());
        }
        let mut values = self.sums().to_vec();
        if let Some(cm) = &self.confusion {
            values.extend(cm.counts.iter().map(|&c| c as f64));
        }
        let summed = all_reduce_f64(comm, &values)?;
        self.set_sums([summed[0], summed[1], summed[2], summed[3]]);
        if let Some(cm) = &mut self.confusion {
            for (dst, src) in cm.counts.iter_mut().zip(&summed[4..]) {
                *dst = *src as u64;
            }
        }
        Ok(())
    }

    /// Restores sums from [`MetricAccumulator::sums`].
    pub(crate) fn set_sums(&mut self, sums: [f64; 4]) {
        self.loss_sum = sums[0];
        self.examples = sums[1] as usize;
        self.correct = sums[2] as usize;
        self.top_k_correct = sums[3] as usize;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_cpu::CpuBackend;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn accuracy_and_top_k_on_hand_made_scores() -> Result<()> {
        let cpu = CpuBackend::new();
        // Row 0: label 2 is the best; row 1: label 0 is second; row 2: label 1 is last.
        let scores = Tensor::from_vec(
            vec![0.1f32, 0.2, 0.7, 0.3, 0.6, 0.1, 0.5, 0.1, 0.4],
            [3, 3],
            &cpu,
        )?;
        let labels = Tensor::from_vec(vec![2i64, 0, 1], [3], &cpu)?;
        assert!(close(accuracy(&scores, &labels)?, 1.0 / 3.0));
        assert!(close(top_k_accuracy(&scores, &labels, 2)?, 2.0 / 3.0));
        assert!(close(top_k_accuracy(&scores, &labels, 3)?, 1.0));
        assert!(top_k_accuracy(&scores, &labels, 0).is_err());
        let bad = Tensor::from_vec(vec![0i64, 1], [2], &cpu)?;
        assert!(accuracy(&scores, &bad).is_err());
        Ok(())
    }

    #[test]
    fn top_k_is_never_below_top_1_with_nan_and_ties() {
        let nan = f64::NAN;
        // An all-NaN row, a NaN beside numbers, and rows of ties, with every label.
        let rows: [[f64; 3]; 5] = [
            [nan, nan, nan],
            [nan, 1.0, nan],
            [2.0, 2.0, 2.0],
            [1.0, 3.0, 3.0],
            [-0.0, 0.0, nan],
        ];
        for row in rows {
            for label in 0..3 {
                let top_1 = argmax_correct(&row, 3, &[label]);
                let mut previous = 0;
                for k in 1..=3 {
                    let hits = top_k_correct(&row, 3, &[label], k);
                    assert!(hits >= previous, "top-{k} below top-{} on {row:?}", k - 1);
                    previous = hits;
                }
                assert_eq!(
                    top_k_correct(&row, 3, &[label], 1),
                    top_1,
                    "{row:?} {label}"
                );
                assert_eq!(top_k_correct(&row, 3, &[label], 3), 1, "{row:?} {label}");
            }
        }
    }

    #[test]
    fn confusion_matrix_precision_recall_f1() -> Result<()> {
        // actual:    0 0 0 1 1 2
        // predicted: 0 0 1 1 2 2
        let mut cm = ConfusionMatrix::new(3);
        for (a, p) in [(0, 0), (0, 0), (0, 1), (1, 1), (1, 2), (2, 2)] {
            cm.add(a, p)?;
        }
        assert_eq!(cm.get(0, 1), 1);
        assert_eq!(cm.total(), 6);
        assert!(close(cm.accuracy(), 4.0 / 6.0));
        let m0 = cm.class_metrics(0);
        assert!(close(m0.precision, 1.0) && close(m0.recall, 2.0 / 3.0));
        assert!(close(m0.f1, 0.8));
        assert_eq!(m0.support, 3);
        let m1 = cm.class_metrics(1);
        assert!(close(m1.precision, 0.5) && close(m1.recall, 0.5) && close(m1.f1, 0.5));
        let m2 = cm.class_metrics(2);
        assert!(close(m2.precision, 0.5) && close(m2.recall, 1.0) && close(m2.f1, 2.0 / 3.0));
        let avg = cm.macro_average();
        assert!(close(avg.precision, (1.0 + 0.5 + 0.5) / 3.0));
        assert!(close(avg.recall, (2.0 / 3.0 + 0.5 + 1.0) / 3.0));
        assert!(close(avg.f1, (0.8 + 0.5 + 2.0 / 3.0) / 3.0));
        assert!(cm.add(3, 0).is_err());
        assert!(cm.report().contains("macro avg"));
        assert!(cm.to_string().lines().count() == 4);
        Ok(())
    }

    #[test]
    fn empty_class_has_zero_metrics() {
        let mut cm = ConfusionMatrix::new(2);
        cm.add(0, 0).ok();
        let m = cm.class_metrics(1);
        assert_eq!((m.precision, m.recall, m.f1, m.support), (0.0, 0.0, 0.0, 0));
    }

    #[test]
    fn accumulator_weights_batches_by_size() -> Result<()> {
        let cpu = CpuBackend::new();
        let mut acc = MetricAccumulator::new(2, Some(2));
        let s1 = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0], [2, 2], &cpu)?;
        let l1 = Tensor::from_vec(vec![0i64, 0], [2], &cpu)?;
        acc.add_batch(1.0, &s1, &l1)?;
        let s2 = Tensor::from_vec(vec![0.0f64, 1.0], [1, 2], &cpu)?;
        let l2 = Tensor::from_vec(vec![1i64], [1], &cpu)?;
        acc.add_batch(4.0, &s2, &l2)?;
        assert!(close(acc.loss(), 2.0));
        assert!(close(acc.accuracy(), 2.0 / 3.0));
        assert!(close(acc.top_k_accuracy(), 1.0));
        assert_eq!(acc.confusion().map(ConfusionMatrix::total), Some(3));
        Ok(())
    }
}
