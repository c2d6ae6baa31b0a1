//! The per-epoch history of a run and its CSV / JSON-lines log.

use nabla_core::{Error, Result};
use serde_json::{Value, json};
use std::path::Path;

/// What one epoch measured.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochRecord {
    /// The epoch, counting from 1.
    pub epoch: u64,
    /// Optimizer steps completed at its end.
    pub step: u64,
    /// Learning rate of the first parameter group at its end.
    pub lr: f64,
    /// Mean training loss per example.
    pub train_loss: f64,
    /// Training accuracy (of the model as it was at each batch).
    pub train_accuracy: f64,
    /// Mean validation loss, when there is a validation set.
    pub val_loss: Option<f64>,
    /// Validation accuracy.
    pub val_accuracy: Option<f64>,
    /// Validation top-k accuracy (`k` from the trainer's configuration).
    pub val_top_k_accuracy: Option<f64>,
    /// Wall-clock seconds of the epoch (training and validation).
    pub seconds: f64,
    /// Training examples per second.
    pub examples_per_sec: f64,
}

/// The log's columns, in order.
const COLUMNS: [&str; 10] = [
    "epoch",
    "step",
    "lr",
    "train_loss",
    "train_accuracy",
    "val_loss",
    "val_accuracy",
    "val_top_k_accuracy",
    "seconds",
    "examples_per_sec",
];

impl EpochRecord {
    /// The record as a JSON object (missing validation values are `null`).
    pub fn to_json(&self) -> Value {
        json!({
            "epoch": self.epoch, "step": self.step, "lr": self.lr,
            "train_loss": self.train_loss, "train_accuracy": self.train_accuracy,
            "val_loss": self.val_loss, "val_accuracy": self.val_accuracy,
            "val_top_k_accuracy": self.val_top_k_accuracy,
            "seconds": self.seconds, "examples_per_sec": self.examples_per_sec,
        })
    }

    /// Parses a record written by [`EpochRecord::to_json`].
    pub fn from_json(v: &Value) -> Result<Self> {
        let num = |k: &str| {
            v[k].as_f64().ok_or_else(|| {
                Error::invalid(
                    "EpochRecord::from_json",
                    format!("field `{k}` is missing or not a number in {v}"),
                )
            })
        };
        let int = |k: &str| {
            v[k].as_u64().ok_or_else(|| {
                Error::invalid(
                    "EpochRecord::from_json",
                    format!("field `{k}` is missing or not an integer in {v}"),
                )
            })
        };
        Ok(EpochRecord {
            epoch: int("epoch")?,
            step: int("step")?,
            lr: num("lr")?,
            train_loss: num("train_loss")?,
            train_accuracy: num("train_accuracy")?,
            val_loss: v["val_loss"].as_f64(),
            val_accuracy: v["val_accuracy"].as_f64(),
            val_top_k_accuracy: v["val_top_k_accuracy"].as_f64(),
            seconds: num("seconds")?,
            examples_per_sec: num("examples_per_sec")?,
        })
    }

    /// The record's values in [`COLUMNS`] order, as CSV fields (empty when missing).
    fn csv_fields(&self) -> Vec<String> {
        let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
        vec![
            self.epoch.to_string(),
            self.step.to_string(),
            self.lr.to_string(),
            self.train_loss.to_string(),
            self.train_accuracy.to_string(),
            opt(self.val_loss),
            opt(self.val_accuracy),
            opt(self.val_top_k_accuracy),
            self.seconds.to_string(),
            self.examples_per_sec.to_string(),
        ]
    }
}

/// The records of all epochs so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct History {
    /// One record per completed epoch, in order.
    pub epochs: Vec<EpochRecord>,
}

impl History {
    /// The history as a JSON array.
    pub fn to_json(&self) -> Value {
        Value::Array(self.epochs.iter().map(EpochRecord::to_json).collect())
    }

    /// Parses [`History::to_json`]'s output (`null` is an empty history).
    pub fn from_json(v: &Value) -> Result<Self> {
        match v {
            Value::Null => Ok(History::default()),
            Value::Array(items) => Ok(History {
                epochs: items
                    .iter()
                    .map(EpochRecord::from_json)
                    .collect::<Result<_>>()?,
            }),
            other => Err(Error::invalid(
                "History::from_json",
                format!("expected an array of epoch records, got {other}"),
            )),
        }
    }

    /// The last record.
    pub fn last(&self) -> Option<&EpochRecord> {
        self.epochs.last()
    }

    /// The history as CSV: a header row, then one row per epoch.
    pub fn to_csv(&self) -> String {
        let mut out = COLUMNS.join(",");
        out.push('\n');
        for r in &self.epochs {
            out.push_str(&r.csv_fields().join(","));
            out.push('\n');
        }
        out
    }

    /// The history as JSON lines: one object per epoch.
    pub fn to_json_lines(&self) -> String {
        self.epochs
            .iter()
            .map(|r| {
                // Written by hand to keep the column order of the CSV.
                let obj = r.to_json();
                let fields: Vec<String> = COLUMNS
                    .iter()
                    .map(|c| format!("{}:{}", Value::from(*c), obj[*c]))
                    .collect();
                format!("{{{}}}\n", fields.join(","))
            })
            .collect()
    }

    /// Writes the log to `path`: CSV for a `.csv` extension, JSON lines for `.jsonl` (or `.ndjson`);
    /// any other extension is an error. The file is rewritten with all epochs so far, atomically; a
    /// `path` that is a symbolic link is an error.
    pub fn write_log(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let text = match LogFormat::from_path(path)? {
            LogFormat::Csv => self.to_csv(),
            LogFormat::JsonLines => self.to_json_lines(),
        };
        write_text(path, &text)
    }
}

/// The format of a training log, chosen by file extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// Comma-separated values with a header row (`.csv`).
    Csv,
    /// One JSON object per line (`.jsonl` or `.ndjson`).
    JsonLines,
}

impl LogFormat {
    /// The format for `path`'s extension, or an error naming the path.
    pub fn from_path(path: &Path) -> Result<Self> {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("csv") => Ok(LogFormat::Csv),
            Some(e) if e.eq_ignore_ascii_case("jsonl") || e.eq_ignore_ascii_case("ndjson") => {
                Ok(LogFormat::JsonLines)
            }
            _ => Err(Error::invalid(
                "training log",
                format!(
                    "cannot tell the log format of {}: use a .csv or .jsonl extension",
                    path.display()
                ),
            )),
        }
    }
}

/// Whether `text`, the start of a file, is the start of a log nabla wrote in `format`: a CSV log
/// starts with its header row, a JSON-lines log with an epoch record.
pub(crate) fn is_log(text: &str, format: LogFormat) -> bool {
    let first = text.lines().next().unwrap_or_default();
    match format {
        LogFormat::Csv => first == COLUMNS.join(","),
        LogFormat::JsonLines => {
            serde_json::from_str::<Value>(first).is_ok_and(|v| EpochRecord::from_json(&v).is_ok())
        }
    }
}

/// Writes `text` to `path` atomically and never through a symbolic link
/// ([`nabla_nn::write_atomic`]), with an error naming the path.
pub(crate) fn write_text(path: &Path, text: &str) -> Result<()> {
    nabla_nn::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(epoch: u64, val: bool) -> EpochRecord {
        EpochRecord {
            epoch,
            step: epoch * 10,
            lr: 0.01,
            train_loss: 1.0 / epoch as f64,
            train_accuracy: 0.5,
            val_loss: val.then_some(0.7),
            val_accuracy: val.then_some(0.8),
            val_top_k_accuracy: val.then_some(0.9),
            seconds: 1.5,
            examples_per_sec: 100.0,
        }
    }

    #[test]
    fn json_round_trip_and_logs() -> Result<()> {
        let h = History {
            epochs: vec![record(1, true), record(2, false)],
        };
        assert_eq!(History::from_json(&h.to_json())?, h);
        assert_eq!(History::from_json(&Value::Null)?, History::default());
        let csv = h.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], COLUMNS.join(","));
        assert_eq!(lines[1], "1,10,0.01,1,0.5,0.7,0.8,0.9,1.5,100");
        assert_eq!(lines[2], "2,20,0.01,0.5,0.5,,,,1.5,100");
        let jl = h.to_json_lines();
        assert_eq!(jl.lines().count(), 2);
        assert!(jl.starts_with("{\"epoch\":1,\"step\":10,"));
        assert!(is_log(&csv, LogFormat::Csv) && is_log(&jl, LogFormat::JsonLines));
        assert!(!is_log("a,b\n1,2\n", LogFormat::Csv));
        assert!(
            !is_log("{\"a\": 1}\n", LogFormat::JsonLines) && !is_log(&csv, LogFormat::JsonLines)
        );
        assert!(LogFormat::from_path(Path::new("x.txt")).is_err());
        assert_eq!(
            LogFormat::from_path(Path::new("x.JSONL"))?,
            LogFormat::JsonLines
        );
        Ok(())
    }
}
