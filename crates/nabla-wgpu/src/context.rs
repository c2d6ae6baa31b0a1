//! The device context: adapter and queue, the buffer pool, the pipeline cache and batched submission.

use nabla_core::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};
use wgpu::util::DeviceExt;

use nabla_core::{KernelTime, Profile, format_profile};

/// Dispatches queued in one encoder before it is submitted without being asked to.
const BATCH: usize = 128;
/// Bytes of freed buffers the pool keeps for reuse; beyond this freed buffers are released.
const POOL_BYTES: u64 = 1 << 30;
/// Smallest buffer handed out (in bytes).
const MIN_BYTES: u64 = 256;
/// Buffer usages of every tensor buffer.
const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

pub(crate) fn backend_error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: "wgpu".into(),
        message: message.into(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Freed buffers by size class (bytes).
#[derive(Default)]
struct Pool {
    free: HashMap<u64, Vec<wgpu::Buffer>>,
    bytes: u64,
}

/// Bytes of the buffer holding one batch's parameter words (see [`Batch::params`]).
const PARAMS_BYTES: u64 = 1 << 18;

/// The open command encoder, its open compute pass (one for the whole batch: WebGPU makes each
/// dispatch its own usage scope, so wgpu orders dependent dispatches inside it), how many
/// dispatches it holds, and their parameter words.
#[derive(Default)]
struct Batch {
    /// Declared before the encoder, so that it ends before the encoder drops.
    pass: Option<wgpu::ComputePass<'static>>,
    encoder: Option<wgpu::CommandEncoder>,
    pending: usize,
    /// The parameters of the batch's dispatches, each at an offset aligned for binding, written to
    /// `Ctx::params` when the batch is submitted (before its commands run), so that a dispatch
    /// needs no buffer of its own.
    params: Vec<u32>,
}

impl Batch {
    /// The compute pass of the batch, opened (with the encoder) when needed.
    fn pass(&mut self, device: &wgpu::Device) -> &mut wgpu::ComputePass<'static> {
        let encoder = self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
        });
        self.pass.get_or_insert_with(|| {
            encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: None,
                })
                .forget_lifetime()
        })
    }

    /// The encoder with no pass open, for copies.
    fn encoder(&mut self, device: &wgpu::Device) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        self.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
        })
    }

    /// Appends `words` at the next offset aligned to `align` bytes; `None` when they do not fit.
    fn stage_params(&mut self, words: &[u32], align: u64) -> Option<u64> {
        let align_words = (align / 4).max(1) as usize;
        let offset = self.params.len().div_ceil(align_words) * align_words;
        if ((offset + words.len()) * 4) as u64 > PARAMS_BYTES {
            return None;
        }
        self.params.resize(offset, 0);
        self.params.extend_from_slice(words);
        Some(offset as u64 * 4)
    }
}

/// One compute dispatch: generated shader text, its buffers and the grid.
pub(crate) struct Dispatch<'a> {
    /// The op launching it (for errors and the profile).
    pub op: &'static str,
    /// The WGSL source without the helper library (`wgsl::PRELUDE`, added when compiling): the
    /// pipeline cache key.
    pub shader: &'a str,
    /// Read-only bindings `in0..`, after the parameter words at binding 0.
    pub inputs: &'a [&'a wgpu::Buffer],
    /// Read-write bindings `out0..`, after the inputs.
    pub outputs: &'a [&'a wgpu::Buffer],
    /// Parameter words (`prm` in the shader).
    pub params: &'a [u32],
    /// Workgroups in x, y and z.
    pub groups: (u32, u32, u32),
}

type Layouts = (Arc<wgpu::BindGroupLayout>, Arc<wgpu::PipelineLayout>);

/// Everything one device needs; shared by every clone of the backend and by every storage handle.
pub(crate) struct Ctx {
    /// This logical device's number among those opened by the process (the `Device` ordinal).
    pub ordinal: usize,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub max_binding: u64,
    pub max_groups: u32,
    /// Storage buffers one shader may bind (parameters, inputs and outputs together).
    pub max_storage_buffers: u32,
    /// Whether f32 subnormals flush to zero, once measured (`WgpuBackend::flushes_subnormals`).
    pub flushes_subnormals: OnceLock<bool>,
    pool: Mutex<Pool>,
    /// The parameter words of the batch in flight (see [`Batch::params`]).
    params: wgpu::Buffer,
    /// Alignment of binding offsets into storage buffers (bytes).
    params_align: u64,
    pipelines: Mutex<HashMap<String, Arc<wgpu::ComputePipeline>>>,
    layouts: Mutex<HashMap<(usize, usize), Layouts>>,
    batch: Mutex<Batch>,
    /// The first device error raised outside an error scope, reported by the next wait.
    failure: Arc<Mutex<Option<String>>>,
    /// Per-kernel times while profiling is on.
    profile: Mutex<Option<Profile>>,
}

impl Drop for Ctx {
    fn drop(&mut self) {
        if let Some(p) = lock(&self.profile).as_ref().filter(|p| p.print_on_drop) {
            eprintln!(
                "wgpu kernel profile ({}):\n{}",
                self.info.name,
                format_profile(&p.rows())
            );
        }
    }
}

impl Ctx {
    /// Opens the default adapter (any device type, software adapters included).
    pub fn new() -> Result<Ctx> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| backend_error(format!("no wgpu adapter found: {e}")))?;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("nabla"),
            required_features: wgpu::Features::empty(),
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| backend_error(format!("could not open the wgpu device: {e}")))?;
        let failure: Arc<Mutex<Option<String>>> = Arc::default();
        let slot = failure.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            lock(&slot).get_or_insert_with(|| e.to_string());
        }));
        let max_binding =
            (limits.max_storage_buffer_binding_size as u64).min(limits.max_buffer_size);
        let params = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("nabla parameters"),
            size: PARAMS_BYTES,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        static OPENED: AtomicUsize = AtomicUsize::new(0);
        Ok(Ctx {
            ordinal: OPENED.fetch_add(1, Ordering::Relaxed),
            device,
            queue,
            info: adapter.get_info(),
            max_binding,
            max_groups: limits.max_compute_workgroups_per_dimension,
            max_storage_buffers: limits.max_storage_buffers_per_shader_stage,
            flushes_subnormals: OnceLock::new(),
            pool: Mutex::default(),
            params,
            params_align: u64::from(limits.min_storage_buffer_offset_alignment),
            pipelines: Mutex::default(),
            layouts: Mutex::default(),
            batch: Mutex::default(),
            failure,
            profile: Mutex::new(profile_from_env().then(|| Profile::new(true))),
        })
    }

    /// Size class of a request: the next power of two, or the exact (aligned) size above the limit's
    /// last power of two.
    fn class(&self, bytes: u64) -> u64 {
        let b = bytes.max(MIN_BYTES);
        let p = b.next_power_of_two();
        if p <= self.max_binding {
            p
        } else {
            b.div_ceil(4) * 4
        }
    }

    fn check_size(&self, op: &'static str, bytes: u64) -> Result<()> {
        if bytes > self.max_binding {
            return Err(Error::invalid(
                op,
                format!(
                    "a buffer of {bytes} bytes exceeds the wgpu adapter's storage-buffer binding \
                     limit of {} bytes",
                    self.max_binding
                ),
            ));
        }
        Ok(())
    }

    /// A buffer of at least `words` 32-bit words, from the pool when one of its size class is free.
    pub fn alloc(&self, op: &'static str, words: usize) -> Result<wgpu::Buffer> {
        let bytes = (words as u64).saturating_mul(4);
        self.check_size(op, bytes)?;
        let class = self.class(bytes);
        if let Some(b) = lock(&self.pool).take(class) {
            return Ok(b);
        }
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: class,
            usage: USAGE,
            mapped_at_creation: false,
        }))
    }

    /// A new buffer holding `words` (padded to its size class).
    pub fn upload(&self, op: &'static str, mut words: Vec<u32>) -> Result<wgpu::Buffer> {
        let bytes = words.len() as u64 * 4;
        self.check_size(op, bytes)?;
        words.resize((self.class(bytes) / 4) as usize, 0);
        Ok(self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &to_bytes(&words),
                usage: USAGE,
            }))
    }

    /// Returns a buffer to the pool (or releases it when the pool is full).
    pub fn recycle(&self, buffer: wgpu::Buffer) {
        let mut pool = lock(&self.pool);
        let size = buffer.size();
        if pool.bytes + size <= POOL_BYTES {
            pool.bytes += size;
            pool.free.entry(size).or_default().push(buffer);
        }
    }

    fn layouts(&self, n_in: usize, n_out: usize) -> Layouts {
        let mut cache = lock(&self.layouts);
        cache
            .entry((n_in, n_out))
            .or_insert_with(|| {
                let entry = |binding: usize, read_only: bool| wgpu::BindGroupLayoutEntry {
                    binding: binding as u32,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                };
                let entries: Vec<_> = (0..1 + n_in + n_out).map(|b| entry(b, b <= n_in)).collect();
                let bgl = self
                    .device
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                        label: None,
                        entries: &entries,
                    });
                let pl = self
                    .device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: None,
                        bind_group_layouts: &[Some(&bgl)],
                        immediate_size: 0,
                    });
                (Arc::new(bgl), Arc::new(pl))
            })
            .clone()
    }

    /// The pipeline for `shader`, compiled on first use and cached by its text.
    fn pipeline(
        &self,
        shader: &str,
        layout: &wgpu::PipelineLayout,
    ) -> Result<(Arc<wgpu::ComputePipeline>, bool)> {
        if let Some(p) = lock(&self.pipelines).get(shader) {
            return Ok((p.clone(), false));
        }
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: None,
                source: wgpu::ShaderSource::Wgsl(
                    format!("{shader}{}", crate::wgsl::PRELUDE).into(),
                ),
            });
        let p = Arc::new(
            self.device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: None,
                    layout: Some(layout),
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                }),
        );
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(backend_error(format!(
                "a generated shader failed to compile: {e}\n{shader}"
            )));
        }
        lock(&self.pipelines).insert(shader.to_string(), p.clone());
        Ok((p, true))
    }

    /// Number of pipelines compiled so far.
    pub fn pipeline_count(&self) -> usize {
        lock(&self.pipelines).len()
    }

    /// Records one dispatch into the open encoder; submits when the batch is full.
    pub fn dispatch(&self, d: Dispatch<'_>) -> Result<()> {
        if d.groups.0 == 0 || d.groups.1 == 0 || d.groups.2 == 0 {
            return Ok(());
        }
        let start = Instant::now();
        let (bgl, pl) = self.layouts(d.inputs.len(), d.outputs.len());
        let (pipeline, compiled) = self.pipeline(d.shader, &pl)?;
        let compile = if compiled {
            start.elapsed()
        } else {
            Duration::ZERO
        };
        let mut params = d.params.to_vec();
        params.resize(params.len().max(4), 0);
        let mut batch = lock(&self.batch);
        let mut staged = batch.stage_params(&params, self.params_align);
        if staged.is_none() && batch.pending > 0 {
            self.submit(&mut batch);
            staged = batch.stage_params(&params, self.params_align);
        }
        let own;
        let params_binding = match staged {
            Some(offset) => wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.params,
                offset,
                size: wgpu::BufferSize::new(params.len() as u64 * 4),
            }),
            // Parameters too long for the shared buffer get one of their own.
            None => {
                own = self
                    .device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: None,
                        contents: &to_bytes(&params),
                        usage: wgpu::BufferUsages::STORAGE,
                    });
                own.as_entire_binding()
            }
        };
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params_binding,
        }];
        for (i, b) in d.inputs.iter().chain(d.outputs).enumerate() {
            entries.push(wgpu::BindGroupEntry {
                binding: i as u32 + 1,
                resource: b.as_entire_binding(),
            });
        }
        let bind = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &bgl,
            entries: &entries,
        });
        let pass = batch.pass(&self.device);
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(d.groups.0, d.groups.1, d.groups.2);
        batch.pending += 1;
        let profiling = lock(&self.profile).is_some();
        if batch.pending >= BATCH || profiling {
            self.submit(&mut batch);
        }
        drop(batch);
        if profiling {
            self.wait(d.op)?;
            self.charge(d.op, start, compile);
        }
        Ok(())
    }

    /// Waits for the device to finish the submitted work.
    fn wait(&self, op: &'static str) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| backend_error(format!("{op}: {e}")))?;
        Ok(())
    }

    /// Adds one call of `op` since `start` to the profile, when profiling is on.
    fn charge(&self, op: &'static str, start: Instant, compile: Duration) {
        if let Some(p) = lock(&self.profile).as_mut() {
            p.add(op, start.elapsed(), compile);
        }
    }

    /// Turns per-kernel profiling on (with an empty table) or off.
    pub fn set_profiling(&self, on: bool) {
        let mut p = lock(&self.profile);
        let print = p.as_ref().is_some_and(|p| p.print_on_drop);
        *p = on.then(|| Profile::new(print));
    }

    /// The profile so far (empty when profiling is off).
    pub fn profile(&self) -> Vec<KernelTime> {
        lock(&self.profile)
            .as_ref()
            .map(Profile::rows)
            .unwrap_or_default()
    }

    fn submit(&self, batch: &mut Batch) {
        batch.pass = None;
        if !batch.params.is_empty() {
            // Ordered before the batch's commands, after those of every earlier submission.
            self.queue
                .write_buffer(&self.params, 0, &to_bytes(&batch.params));
            batch.params.clear();
        }
        if let Some(enc) = batch.encoder.take() {
            self.queue.submit([enc.finish()]);
        }
        batch.pending = 0;
    }

    /// Submits queued work and waits for the device to finish it.
    pub fn synchronize(&self) -> Result<()> {
        self.submit(&mut lock(&self.batch));
        self.wait("synchronize")?;
        self.check_failure()
    }

    /// Reports (once) a device error raised since the last wait.
    fn check_failure(&self) -> Result<()> {
        match lock(&self.failure).take() {
            Some(message) => Err(backend_error(message)),
            None => Ok(()),
        }
    }

    /// Copies `words` 32-bit words starting at word `start` of `buffer` back to the host.
    pub fn read_words(
        &self,
        buffer: &wgpu::Buffer,
        start: usize,
        words: usize,
    ) -> Result<Vec<u32>> {
        if words == 0 {
            return Ok(Vec::new());
        }
        let t0 = Instant::now();
        let bytes = words as u64 * 4;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        {
            let mut batch = lock(&self.batch);
            let encoder = batch.encoder(&self.device);
            encoder.copy_buffer_to_buffer(buffer, start as u64 * 4, &staging, 0, bytes);
            self.submit(&mut batch);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        staging.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.wait("read")?;
        rx.recv()
            .map_err(|e| backend_error(format!("read: mapping was dropped: {e}")))?
            .map_err(|e| backend_error(format!("read: could not map the buffer: {e}")))?;
        let view = staging
            .get_mapped_range(..)
            .map_err(|e| backend_error(format!("read: {e}")))?;
        let out = view
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        drop(view);
        staging.unmap();
        self.check_failure()?;
        self.charge("read", t0, Duration::ZERO);
        Ok(out)
    }

    /// Workgroup grid for `groups` workgroups: `(x, y)` with `x * y >= groups`, neither above the
    /// per-dimension limit. Shaders recover the linear workgroup index as `wid.y * nwg.x + wid.x`.
    pub fn grid(&self, groups: usize, op: &'static str) -> Result<(u32, u32, u32)> {
        let max = self.max_groups.max(1) as usize;
        let x = groups.min(max);
        let y = if x == 0 { 0 } else { groups.div_ceil(x) };
        if y > max {
            return Err(Error::invalid(
                op,
                format!("{groups} workgroups exceed the adapter's {max} x {max} dispatch grid"),
            ));
        }
        Ok((x as u32, y as u32, 1))
    }
}

impl Pool {
    fn take(&mut self, class: u64) -> Option<wgpu::Buffer> {
        let b = self.free.get_mut(&class)?.pop()?;
        self.bytes -= class;
        Some(b)
    }
}

/// The little-endian bytes of 32-bit words.
pub(crate) fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// `true` when the environment asks for profiling (`NABLA_WGPU_PROFILE` set, not empty or `0`): the
/// table is then printed to standard error when the device is dropped.
fn profile_from_env() -> bool {
    std::env::var("NABLA_WGPU_PROFILE").is_ok_and(|v| !v.is_empty() && v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_staged_at_aligned_offsets_until_the_buffer_is_full() {
        let mut batch = Batch::default();
        assert_eq!(batch.stage_params(&[1, 2, 3, 4, 5], 256), Some(0));
        assert_eq!(batch.stage_params(&[6, 7, 8, 9], 256), Some(256));
        assert_eq!(batch.stage_params(&[10, 11, 12, 13], 16), Some(272));
        assert_eq!(batch.params[..5], [1, 2, 3, 4, 5]);
        assert_eq!(batch.params[64..68], [6, 7, 8, 9]);
        assert_eq!(batch.params[68..], [10, 11, 12, 13]);
        // What no longer fits is refused, and leaves the staged words as they were.
        let len = batch.params.len();
        let rest = vec![0; PARAMS_BYTES as usize / 4 - 64];
        assert_eq!(batch.stage_params(&rest, 256), None);
        assert_eq!(batch.params.len(), len);
        let mut empty = Batch::default();
        assert_eq!(empty.stage_params(&rest, 256), Some(0));
        assert_eq!(empty.stage_params(&[0; 64], 4), Some(PARAMS_BYTES - 256));
        assert_eq!(empty.stage_params(&[0], 4), None);
    }
}
