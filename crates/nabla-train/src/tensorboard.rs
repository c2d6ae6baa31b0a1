//! TensorBoard event files: scalars, histograms and hyperparameters in the format `tensorboard`
//! reads (TFRecord framing of `Event` protocol buffers), written by [`SummaryWriter`] and read back
//! by [`read_events`].
//!
//! A record is the payload's length (u64, little-endian), the masked CRC-32C of those 8 bytes, the
//! payload, and the masked CRC-32C of the payload. The payloads are `tensorflow.Event` messages; the
//! messages below declare the fields nabla writes, with TensorFlow's field numbers, so that `prost`
//! encodes them without a `.proto` compiler. Hyperparameters use the `hparams` plugin's
//! `session_start_info`.
//!
//! ```
//! use nabla_train::tensorboard::{HParam, SummaryWriter, read_events};
//! let dir = std::env::temp_dir().join(format!("nabla-tb-doc-{}", std::process::id()));
//! let mut writer = SummaryWriter::new(&dir)?;
//! writer.add_scalar("train/loss", 0.5, 1)?;
//! writer.add_histogram("weights/w", &[0.1, -0.2, 0.3], 1)?;
//! writer.add_hparams(&[("lr".into(), HParam::Number(1e-3)), ("model".into(), HParam::Text("cnn".into()))])?;
//! writer.flush()?;
//! let events = read_events(writer.path())?;
//! assert_eq!(events.len(), 4); // the file version, then one event per call
//! assert_eq!(events[1].scalar("train/loss"), Some(0.5));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), nabla_core::Error>(())
//! ```

use nabla_core::{Error, Result};
use prost::Message;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// The largest record [`read_events`] accepts (a histogram of a few thousand buckets is a few KiB).
pub const MAX_RECORD_BYTES: u64 = 64 << 20;

/// Buckets of a histogram written by [`SummaryWriter::add_histogram`].
pub const HISTOGRAM_BUCKETS: usize = 30;

/// `tensorflow.Event`: a time, a step and what happened.
#[derive(Clone, PartialEq, Message)]
pub struct Event {
    /// Seconds since the Unix epoch.
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    /// The training step the event belongs to.
    #[prost(int64, tag = "2")]
    pub step: i64,
    /// The file's version (first event) or a summary.
    #[prost(oneof = "EventKind", tags = "3, 5")]
    pub what: Option<EventKind>,
}

/// What an [`Event`] carries.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum EventKind {
    /// `brain.Event:2`, the first event of a file.
    #[prost(string, tag = "3")]
    FileVersion(String),
    /// Values at a step.
    #[prost(message, tag = "5")]
    Summary(Summary),
}

/// `tensorflow.Summary`: tagged values.
#[derive(Clone, PartialEq, Message)]
pub struct Summary {
    /// The values.
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<SummaryValue>,
}

/// `tensorflow.Summary.Value`: one tagged scalar or histogram (or a plugin's payload).
#[derive(Clone, PartialEq, Message)]
pub struct SummaryValue {
    /// The series the value belongs to (`train/loss`).
    #[prost(string, tag = "1")]
    pub tag: String,
    /// Plugin data (hyperparameters).
    #[prost(message, optional, tag = "9")]
    pub metadata: Option<SummaryMetadata>,
    /// The value.
    #[prost(oneof = "ValueKind", tags = "2, 5")]
    pub value: Option<ValueKind>,
}

/// The value of a [`SummaryValue`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ValueKind {
    /// A scalar.
    #[prost(float, tag = "2")]
    Simple(f32),
    /// A histogram.
    #[prost(message, tag = "5")]
    Histogram(HistogramProto),
}

/// `tensorflow.SummaryMetadata`, only its plugin data.
#[derive(Clone, PartialEq, Message)]
pub struct SummaryMetadata {
    /// Which plugin reads the value, and its payload.
    #[prost(message, optional, tag = "1")]
    pub plugin_data: Option<PluginData>,
}

/// `tensorflow.SummaryMetadata.PluginData`.
#[derive(Clone, PartialEq, Message)]
pub struct PluginData {
    /// The plugin (`hparams`).
    #[prost(string, tag = "1")]
    pub plugin_name: String,
    /// Its serialized payload.
    #[prost(bytes = "vec", tag = "2")]
    pub content: Vec<u8>,
}

/// `tensorflow.HistogramProto`: bucket counts with their right edges.
#[derive(Clone, PartialEq, Message)]
pub struct HistogramProto {
    /// Smallest value.
    #[prost(double, tag = "1")]
    pub min: f64,
    /// Largest value.
    #[prost(double, tag = "2")]
    pub max: f64,
    /// Number of values.
    #[prost(double, tag = "3")]
    pub num: f64,
    /// Sum of the values.
    #[prost(double, tag = "4")]
    pub sum: f64,
    /// Sum of their squares.
    #[prost(double, tag = "5")]
    pub sum_squares: f64,
    /// The right edge of each bucket.
    #[prost(double, repeated, tag = "6")]
    pub bucket_limit: Vec<f64>,
    /// The count of each bucket.
    #[prost(double, repeated, tag = "7")]
    pub bucket: Vec<f64>,
}

/// The `hparams` plugin's `HParamsPluginData`, with only a session start.
#[derive(Clone, PartialEq, Message)]
struct HParamsPluginData {
    #[prost(int32, tag = "1")]
    version: i32,
    #[prost(message, optional, tag = "3")]
    session_start_info: Option<SessionStartInfo>,
}

/// The `hparams` plugin's `SessionStartInfo`: the run's hyperparameters.
#[derive(Clone, PartialEq, Message)]
struct SessionStartInfo {
    #[prost(map = "string, message", tag = "1")]
    hparams: HashMap<String, ProtoValue>,
    #[prost(double, tag = "5")]
    start_time_secs: f64,
}

/// `google.protobuf.Value`, the kinds hyperparameters take.
#[derive(Clone, PartialEq, Message)]
struct ProtoValue {
    #[prost(oneof = "ProtoKind", tags = "2, 3, 4")]
    kind: Option<ProtoKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum ProtoKind {
    #[prost(double, tag = "2")]
    Number(f64),
    #[prost(string, tag = "3")]
    Text(String),
    #[prost(bool, tag = "4")]
    Bool(bool),
}

/// A hyperparameter's value.
#[derive(Clone, Debug, PartialEq)]
pub enum HParam {
    /// A number (learning rate, batch size).
    Number(f64),
    /// A name (model, optimizer).
    Text(String),
    /// A switch.
    Bool(bool),
}

impl Event {
    /// The scalar tagged `tag` in this event, if it holds one.
    pub fn scalar(&self, tag: &str) -> Option<f32> {
        self.values()
            .find(|v| v.tag == tag)
            .and_then(|v| match v.value {
                Some(ValueKind::Simple(x)) => Some(x),
                _ => None,
            })
    }

    /// The histogram tagged `tag` in this event, if it holds one.
    pub fn histogram(&self, tag: &str) -> Option<&HistogramProto> {
        self.values()
            .find(|v| v.tag == tag)
            .and_then(|v| match &v.value {
                Some(ValueKind::Histogram(h)) => Some(h),
                _ => None,
            })
    }

    /// The hyperparameters of an `hparams` session-start event, as written by
    /// [`SummaryWriter::add_hparams`].
    pub fn hparams(&self) -> Option<Vec<(String, HParam)>> {
        let value = self.values().find(|v| v.tag == HPARAMS_TAG)?;
        let plugin = value.metadata.as_ref()?.plugin_data.as_ref()?;
        let data = HParamsPluginData::decode(plugin.content.as_slice()).ok()?;
        let mut out: Vec<(String, HParam)> = data
            .session_start_info?
            .hparams
            .into_iter()
            .filter_map(|(k, v)| {
                Some((
                    k,
                    match v.kind? {
                        ProtoKind::Number(x) => HParam::Number(x),
                        ProtoKind::Text(s) => HParam::Text(s),
                        ProtoKind::Bool(b) => HParam::Bool(b),
                    },
                ))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Some(out)
    }

    fn values(&self) -> impl Iterator<Item = &SummaryValue> {
        match &self.what {
            Some(EventKind::Summary(s)) => s.value.iter(),
            _ => [].iter(),
        }
    }
}

/// The tag of the hyperparameter summary (the `hparams` plugin's).
const HPARAMS_TAG: &str = "_hparams_/session_start_info";

/// TFRecord's masked CRC-32C.
fn masked_crc(bytes: &[u8]) -> u32 {
    let crc = crc32c::crc32c(bytes);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::Io {
        context: format!("{what} TensorBoard event file {}", path.display()),
        message: e.to_string(),
    }
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Writes an event file in a directory, as PyTorch's `torch.utils.tensorboard.SummaryWriter` does:
/// `events.out.tfevents.<seconds>.<host>.<process>` (a new file per writer, never an existing one:
/// a path that exists, a symbolic link included, is refused).
pub struct SummaryWriter {
    file: BufWriter<File>,
    path: PathBuf,
}

impl SummaryWriter {
    /// Creates `dir` (and its parents) if needed and a new event file in it, starting with the file
    /// version event.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::invalid(
                "SummaryWriter",
                format!(
                    "{} is a symbolic link; give the directory itself",
                    dir.display()
                ),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, "creating the directory of", e))?;
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| {
                !h.is_empty()
                    && h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            })
            .unwrap_or_else(|| "localhost".into());
        let base = format!(
            "events.out.tfevents.{}.{host}.{}",
            now_secs() as u64,
            std::process::id()
        );
        // A second writer in the same second and process gets a numbered name.
        let (file, path) = (0..1000)
            .find_map(|n| {
                let name = if n == 0 {
                    base.clone()
                } else {
                    format!("{base}.{n}")
                };
                let path = dir.join(name);
                OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .ok()
                    .map(|f| (f, path))
            })
            .ok_or_else(|| {
                Error::invalid(
                    "SummaryWriter",
                    format!("could not create a new event file in {}", dir.display()),
                )
            })?;
        let mut writer = SummaryWriter {
            file: BufWriter::new(file),
            path,
        };
        writer.write_event(Event {
            wall_time: now_secs(),
            step: 0,
            what: Some(EventKind::FileVersion("brain.Event:2".into())),
        })?;
        Ok(writer)
    }

    /// The event file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_event(&mut self, event: Event) -> Result<()> {
        let payload = event.encode_to_vec();
        let len = (payload.len() as u64).to_le_bytes();
        let path = self.path.clone();
        let mut write = |bytes: &[u8]| {
            self.file
                .write_all(bytes)
                .map_err(|e| io_error(&path, "writing", e))
        };
        write(&len)?;
        write(&masked_crc(&len).to_le_bytes())?;
        write(&payload)?;
        write(&masked_crc(&payload).to_le_bytes())
    }

    fn write_values(&mut self, step: u64, value: Vec<SummaryValue>) -> Result<()> {
        self.write_event(Event {
            wall_time: now_secs(),
            step: i64::try_from(step).unwrap_or(i64::MAX),
            what: Some(EventKind::Summary(Summary { value })),
        })
    }

    /// Appends the scalar `value` of series `tag` at `step`.
    pub fn add_scalar(&mut self, tag: &str, value: f64, step: u64) -> Result<()> {
        self.write_values(
            step,
            vec![SummaryValue {
                tag: tag.into(),
                metadata: None,
                value: Some(ValueKind::Simple(value as f32)),
            }],
        )
    }

    /// Appends a histogram of `values` (non-finite ones left out) of series `tag` at `step`, in
    /// [`HISTOGRAM_BUCKETS`] buckets of equal width between the smallest and largest value.
    pub fn add_histogram(&mut self, tag: &str, values: &[f64], step: u64) -> Result<()> {
        let histo = histogram(values);
        self.write_values(
            step,
            vec![SummaryValue {
                tag: tag.into(),
                metadata: None,
                value: Some(ValueKind::Histogram(histo)),
            }],
        )
    }

    /// Records the run's hyperparameters (TensorBoard's HParams tab).
    pub fn add_hparams(&mut self, hparams: &[(String, HParam)]) -> Result<()> {
        let info = SessionStartInfo {
            hparams: hparams
                .iter()
                .map(|(k, v)| {
                    let kind = match v {
                        HParam::Number(x) => ProtoKind::Number(*x),
                        HParam::Text(s) => ProtoKind::Text(s.clone()),
                        HParam::Bool(b) => ProtoKind::Bool(*b),
                    };
                    (k.clone(), ProtoValue { kind: Some(kind) })
                })
                .collect(),
            start_time_secs: now_secs(),
        };
        let content = HParamsPluginData {
            version: 0,
            session_start_info: Some(info),
        }
        .encode_to_vec();
        self.write_values(
            0,
            vec![SummaryValue {
                tag: HPARAMS_TAG.into(),
                metadata: Some(SummaryMetadata {
                    plugin_data: Some(PluginData {
                        plugin_name: "hparams".into(),
                        content,
                    }),
                }),
                value: None,
            }],
        )
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> Result<()> {
        let path = self.path.clone();
        self.file.flush().map_err(|e| io_error(&path, "writing", e))
    }
}

/// The histogram of the finite `values`.
fn histogram(values: &[f64]) -> HistogramProto {
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let (min, max) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let mut h = HistogramProto {
        num: finite.len() as f64,
        sum: finite.iter().sum(),
        sum_squares: finite.iter().map(|v| v * v).sum(),
        ..Default::default()
    };
    if finite.is_empty() {
        return h;
    }
    (h.min, h.max) = (min, max);
    let width = (max - min) / HISTOGRAM_BUCKETS as f64;
    if width == 0.0 {
        h.bucket_limit = vec![max];
        h.bucket = vec![finite.len() as f64];
        return h;
    }
    h.bucket_limit = (1..=HISTOGRAM_BUCKETS)
        .map(|i| {
            if i == HISTOGRAM_BUCKETS {
                max
            } else {
                min + width * i as f64
            }
        })
        .collect();
    h.bucket = vec![0.0; HISTOGRAM_BUCKETS];
    for v in finite {
        let b = (((v - min) / width) as usize).min(HISTOGRAM_BUCKETS - 1);
        h.bucket[b] += 1.0;
    }
    h
}

/// Reads every event of an event file, record by record (the file is never held whole), checking
/// each record's length and both checksums; an error naming the file and the record for a truncated
/// or corrupt file, or a record larger than [`MAX_RECORD_BYTES`].
pub fn read_events(path: impl AsRef<Path>) -> Result<Vec<Event>> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|e| io_error(path, "opening", e))?;
    let mut reader = std::io::BufReader::new(file);
    let corrupt = |n: usize, why: &str| {
        Error::invalid(
            "read_events",
            format!("{}: record {n} {why}", path.display()),
        )
    };
    let mut events = Vec::new();
    loop {
        let n = events.len();
        let mut header = [0u8; 12];
        match read_full(&mut reader, &mut header).map_err(|e| io_error(path, "reading", e))? {
            0 => return Ok(events),
            12 => {}
            _ => return Err(corrupt(n, "is truncated in its header")),
        }
        let (len_bytes, crc_bytes) = header.split_at(8);
        let len = u64::from_le_bytes(len_bytes.try_into().expect("8 bytes"));
        if u32::from_le_bytes(crc_bytes.try_into().expect("4 bytes")) != masked_crc(len_bytes) {
            return Err(corrupt(n, "has a corrupt length"));
        }
        if len > MAX_RECORD_BYTES {
            return Err(corrupt(n, &format!("claims {len} bytes, over the limit")));
        }
        let mut body = vec![0u8; len as usize + 4];
        if read_full(&mut reader, &mut body).map_err(|e| io_error(path, "reading", e))?
            != body.len()
        {
            return Err(corrupt(n, "is truncated"));
        }
        let (payload, crc) = body.split_at(len as usize);
        if u32::from_le_bytes(crc.try_into().expect("4 bytes")) != masked_crc(payload) {
            return Err(corrupt(n, "has a corrupt payload"));
        }
        events.push(Event::decode(payload).map_err(|e| corrupt(n, &format!("is no Event: {e}")))?);
    }
}

/// Reads until `buf` is full or the input ends; the number of bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}
