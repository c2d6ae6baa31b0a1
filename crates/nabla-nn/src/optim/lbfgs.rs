//! L-BFGS (PyTorch's `torch.optim.LBFGS`): a quasi-Newton method over all parameters flattened into
//! one vector, with an optional strong-Wolfe line search. The vector work runs on the host in f64.

use super::config::{JsonField, config_struct};
use super::{OptimOptions, OptimizerState, ParamGroup};
use crate::param::Param;
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{Gradients, Tensor};
use serde_json::{Value, json};

/// The line search of [`Lbfgs`] (PyTorch's `line_search_fn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineSearch {
    /// A bracketing search for a step satisfying the strong Wolfe conditions (`"strong_wolfe"`).
    StrongWolfe,
}

impl JsonField for LineSearch {
    fn to_json(&self) -> Value {
        json!("strong_wolfe")
    }
    fn from_json(v: &Value, name: &str) -> Result<Self> {
        match v.as_str() {
            Some("strong_wolfe") => Ok(LineSearch::StrongWolfe),
            _ => Err(Error::invalid(
                "LBFGS",
                format!("`{name}` must be \"strong_wolfe\" or null, got {v}"),
            )),
        }
    }
}

config_struct! {
    /// Hyper-parameters of [`Lbfgs`] (PyTorch's `torch.optim.LBFGS` defaults).
    pub struct LbfgsConfig {
        /// Learning rate (the initial step length).
        pub lr: f64 = 1.0,
        /// Maximal number of iterations per `step`.
        pub max_iter: usize = 20,
        /// Maximal number of loss evaluations per `step` (default `max_iter * 5 / 4`).
        pub max_eval: Option<usize> = None,
        /// Stop when the largest gradient element is at most this.
        pub tolerance_grad: f64 = 1e-7,
        /// Stop when the step or the loss change is below this.
        pub tolerance_change: f64 = 1e-9,
        /// Number of correction pairs kept.
        pub history_size: usize = 100,
        /// Line search (`None`: fixed steps of `lr`).
        pub line_search_fn: Option<LineSearch> = None,
        /// Ascend instead of descend.
        pub maximize: bool = false,
    }
}

/// The state kept between `step` calls (PyTorch keeps it under the first parameter).
#[derive(Clone, Debug, Default)]
struct History {
    func_evals: usize,
    n_iter: usize,
    d: Vec<f64>,
    t: f64,
    old_dirs: Vec<Vec<f64>>,
    old_stps: Vec<Vec<f64>>,
    ro: Vec<f64>,
    h_diag: f64,
    prev_flat_grad: Option<Vec<f64>>,
    prev_loss: f64,
}

/// What a loss evaluation returns: the loss and the gradients of a backward pass.
pub type LossAndGrads<B> = (Tensor<B>, Gradients<B>);

/// PyTorch's `torch.optim.LBFGS`. Each [`Lbfgs::step`] runs up to `max_iter` iterations, calling the
/// closure (which computes the loss and its gradients) as often as it needs.
///
/// ```
/// use nabla_nn::optim::{Lbfgs, LbfgsConfig};
/// use nabla_nn::Param;
/// use nabla_tensor::Tensor;
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Param::new(Tensor::from_vec(vec![3.0f64, -1.0], [2], &cpu)?)?;
/// let mut opt = Lbfgs::new(vec![x.clone()], LbfgsConfig::default())?;
/// opt.step(|| {
///     let loss = x.value().sub(1.0)?.square()?.sum_all()?;
///     let grads = loss.backward()?;
///     Ok((loss, grads))
/// })?;
/// assert!(x.value().sub(1.0)?.abs()?.max_all()?.item::<f64>()? < 1e-6);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug)]
pub struct Lbfgs<B: Backend> {
    group: ParamGroup<B>,
    config: LbfgsConfig,
    state: History,
}

const OP: &str = "LBFGS";

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn abs_max(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// `a += alpha * b`.
fn axpy(a: &mut [f64], alpha: f64, b: &[f64]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += alpha * y);
}

fn to_host<B: Backend>(t: &Tensor<B>) -> Result<Vec<f64>> {
    t.to_f64_vec()
}

fn cubic_interpolate(p1: (f64, f64, f64), p2: (f64, f64, f64), bounds: Option<(f64, f64)>) -> f64 {
    let ((x1, f1, g1), (x2, f2, g2)) = (p1, p2);
    let (lo, hi) = bounds.unwrap_or(if x1 <= x2 { (x1, x2) } else { (x2, x1) });
    let d1 = g1 + g2 - 3.0 * (f1 - f2) / (x1 - x2);
    let d2_square = d1 * d1 - g1 * g2;
    if d2_square >= 0.0 {
        let d2 = d2_square.sqrt();
        let min_pos = if x1 <= x2 {
            x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2.0 * d2))
        } else {
            x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2.0 * d2))
        };
        min_pos.max(lo).min(hi)
    } else {
        (lo + hi) / 2.0
    }
}

/// One point of the line search: step, loss, flat gradient and directional derivative.
#[derive(Clone)]
struct Point {
    t: f64,
    f: f64,
    g: Vec<f64>,
    gtd: f64,
}

impl<B: Backend> Lbfgs<B> {
    /// An L-BFGS optimizer over `params` (one group, as PyTorch requires).
    pub fn new(params: Vec<Param<B>>, config: LbfgsConfig) -> Result<Self> {
        if config.lr.is_nan() || config.lr < 0.0 {
            return Err(Error::invalid(
                OP,
                format!("invalid learning rate: {}", config.lr),
            ));
        }
        if config.max_iter == 0 || config.history_size == 0 {
            return Err(Error::invalid(
                OP,
                "max_iter and history_size must be at least 1",
            ));
        }
        Ok(Lbfgs {
            group: ParamGroup {
                params,
                options: OptimOptions::Lbfgs(config.clone()),
                initial_lr: None,
            },
            config,
            state: History::default(),
        })
    }

    /// The single parameter group.
    pub fn param_groups(&self) -> &[ParamGroup<B>] {
        std::slice::from_ref(&self.group)
    }

    /// The learning rate.
    pub fn lr(&self) -> f64 {
        self.config.lr
    }

    /// Sets the learning rate.
    pub fn set_lr(&mut self, lr: f64) {
        self.config.lr = lr;
        self.group.options.set_lr(lr);
    }

    /// Total number of closure evaluations so far (PyTorch's `state["func_evals"]`).
    pub fn func_evals(&self) -> usize {
        self.state.func_evals
    }

    /// Total number of iterations so far (PyTorch's `state["n_iter"]`).
    pub fn n_iter(&self) -> usize {
        self.state.n_iter
    }

    fn flat_params(&self) -> Result<Vec<f64>> {
        let mut out = Vec::new();
        for p in &self.group.params {
            out.extend(to_host(&p.data())?);
        }
        Ok(out)
    }

    fn set_flat(&self, flat: &[f64]) -> Result<()> {
        let mut offset = 0;
        for p in &self.group.params {
            let data = p.data();
            let n = data.numel();
            let values = flat[offset..offset + n].to_vec();
            offset += n;
            p.set(Tensor::from_f64s(
                values,
                data.shape().to_vec(),
                data.dtype(),
                data.backend(),
            )?)?;
        }
        Ok(())
    }

    /// `params += t * d`.
    fn add_grad(&self, t: f64, d: &[f64]) -> Result<()> {
        let mut x = self.flat_params()?;
        axpy(&mut x, t, d);
        self.set_flat(&x)
    }

    /// Evaluates the closure: the loss (negated under `maximize`) and the flat gradient, with zeros for
    /// parameters the loss does not reach.
    fn evaluate(
        &self,
        closure: &mut dyn FnMut() -> Result<LossAndGrads<B>>,
    ) -> Result<(Tensor<B>, f64, Vec<f64>)> {
        let (loss, grads) = closure()?;
        let raw = match to_host(&loss)?[..] {
            [raw] => raw,
            ref v => {
                return Err(Error::invalid(
                    "LBFGS::step",
                    format!(
                        "the closure's loss must be one number, got {} values",
                        v.len()
                    ),
                ));
            }
        };
        let mut flat = Vec::new();
        for p in &self.group.params {
            match p.grad(&grads) {
                Some(g) if g.shape() == p.shape().as_slice() => flat.extend(to_host(&g)?),
                Some(g) => {
                    return Err(Error::shapes(OP, g.shape(), &p.shape())
                        .with_hint("a gradient must have its parameter's shape"));
                }
                None => flat.extend(std::iter::repeat_n(0.0, p.numel())),
            }
        }
        if self.config.maximize {
            flat.iter_mut().for_each(|x| *x = -*x);
            Ok((loss, -raw, flat))
        } else {
            Ok((loss, raw, flat))
        }
    }

    /// Loss and gradient at `x + t d`, leaving the parameters at `x`.
    fn directional(
        &self,
        closure: &mut dyn FnMut() -> Result<LossAndGrads<B>>,
        x: &[f64],
        t: f64,
        d: &[f64],
    ) -> Result<(f64, Vec<f64>)> {
        self.add_grad(t, d)?;
        let (_, f, g) = self.evaluate(closure)?;
        self.set_flat(x)?;
        Ok((f, g))
    }

    /// PyTorch's `_strong_wolfe`: returns the accepted point and the number of evaluations.
    fn strong_wolfe(
        &self,
        closure: &mut dyn FnMut() -> Result<LossAndGrads<B>>,
        start: Point,
        t: f64,
        d: &[f64],
        max_ls: usize,
    ) -> Result<(Point, usize)> {
        let (c1, c2, tolerance_change) = (1e-4, 0.9, 1e-9);
        let x = self.flat_params()?;
        let d_norm = abs_max(d);
        let mut eval = |t: f64| -> Result<Point> {
            let (f, g) = self.directional(&mut *closure, &x, t, d)?;
            let gtd = dot(&g, d);
            Ok(Point { t, f, g, gtd })
        };
        let (f, gtd) = (start.f, start.gtd);
        let mut new = eval(t)?;
        let mut evals = 1;
        let mut prev = Point {
            t: 0.0,
            ..start.clone()
        };
        let mut done = false;
        let mut ls_iter = 0;
        let mut bracket: Vec<Point> = Vec::new();
        while ls_iter < max_ls {
            if new.f > f + c1 * new.t * gtd || (ls_iter > 1 && new.f >= prev.f) {
                bracket = vec![prev.clone(), new.clone()];
                break;
            }
            if new.gtd.abs() <= -c2 * gtd {
                bracket = vec![new.clone()];
                done = true;
                break;
            }
            if new.gtd >= 0.0 {
                bracket = vec![prev.clone(), new.clone()];
                break;
            }
            let bounds = (new.t + 0.01 * (new.t - prev.t), new.t * 10.0);
            let t_next = cubic_interpolate(
                (prev.t, prev.f, prev.gtd),
                (new.t, new.f, new.gtd),
                Some(bounds),
            );
            prev = new;
            new = eval(t_next)?;
            evals += 1;
            ls_iter += 1;
        }
        if ls_iter == max_ls {
            bracket = vec![Point { t: 0.0, ..start }, new];
        }
        let (mut low, mut high) = if bracket[0].f <= bracket[bracket.len() - 1].f {
            (0, 1)
        } else {
            (1, 0)
        };
        let mut insuf_progress = false;
        while !done && ls_iter < max_ls {
            let (b0, b1) = (&bracket[0], &bracket[1]);
            if (b1.t - b0.t).abs() * d_norm < tolerance_change {
                break;
            }
            let mut t = cubic_interpolate((b0.t, b0.f, b0.gtd), (b1.t, b1.f, b1.gtd), None);
            let (bmax, bmin) = (b0.t.max(b1.t), b0.t.min(b1.t));
            let eps = 0.1 * (bmax - bmin);
            if (bmax - t).min(t - bmin) < eps {
                if insuf_progress || t >= bmax || t <= bmin {
                    t = if (t - bmax).abs() < (t - bmin).abs() {
                        bmax - eps
                    } else {
                        bmin + eps
                    };
                    insuf_progress = false;
                } else {
                    insuf_progress = true;
                }
            } else {
                insuf_progress = false;
            }
            let new = eval(t)?;
            evals += 1;
            ls_iter += 1;
            if new.f > f + c1 * t * gtd || new.f >= bracket[low].f {
                bracket[high] = new;
                (low, high) = if bracket[0].f <= bracket[1].f {
                    (0, 1)
                } else {
                    (1, 0)
                };
            } else {
                if new.gtd.abs() <= -c2 * gtd {
                    done = true;
                } else if new.gtd * (bracket[high].t - bracket[low].t) >= 0.0 {
                    bracket[high] = bracket[low].clone();
                }
                bracket[low] = new;
            }
        }
        Ok((bracket.swap_remove(low), evals))
    }

    /// One L-BFGS step (up to `max_iter` iterations); `closure` recomputes the loss and its gradients
    /// at the current parameters. Returns the loss of the first evaluation, as PyTorch.
    pub fn step<F>(&mut self, mut closure: F) -> Result<Tensor<B>>
    where
        F: FnMut() -> Result<LossAndGrads<B>>,
    {
        let closure: &mut dyn FnMut() -> Result<LossAndGrads<B>> = &mut closure;
        let c = self.config.clone();
        let max_eval = c.max_eval.unwrap_or(c.max_iter * 5 / 4);
        let (orig_loss, mut loss, mut flat_grad) = self.evaluate(closure)?;
        let mut current_evals = 1;
        self.state.func_evals += 1;
        let mut opt_cond = abs_max(&flat_grad) <= c.tolerance_grad;
        if opt_cond {
            return Ok(orig_loss);
        }
        let mut st = std::mem::take(&mut self.state);
        let mut n_iter = 0;
        while n_iter < c.max_iter {
            n_iter += 1;
            st.n_iter += 1;
            if st.n_iter == 1 {
                st.d = flat_grad.iter().map(|g| -g).collect();
                st.old_dirs.clear();
                st.old_stps.clear();
                st.ro.clear();
                st.h_diag = 1.0;
            } else if let Some(prev) = &st.prev_flat_grad {
                let y: Vec<f64> = flat_grad.iter().zip(prev).map(|(a, b)| a - b).collect();
                let s: Vec<f64> = st.d.iter().map(|x| x * st.t).collect();
                let ys = dot(&y, &s);
                if ys > 1e-10 {
                    if st.old_dirs.len() == c.history_size {
                        st.old_dirs.remove(0);
                        st.old_stps.remove(0);
                        st.ro.remove(0);
                    }
                    st.h_diag = ys / dot(&y, &y);
                    st.old_dirs.push(y);
                    st.old_stps.push(s);
                    st.ro.push(1.0 / ys);
                }
                let num_old = st.old_dirs.len();
                let mut al = vec![0.0; num_old];
                let mut q: Vec<f64> = flat_grad.iter().map(|g| -g).collect();
                for i in (0..num_old).rev() {
                    al[i] = dot(&st.old_stps[i], &q) * st.ro[i];
                    axpy(&mut q, -al[i], &st.old_dirs[i]);
                }
                let mut r: Vec<f64> = q.iter().map(|x| x * st.h_diag).collect();
                for (((y, s), ro), al) in st.old_dirs.iter().zip(&st.old_stps).zip(&st.ro).zip(&al)
                {
                    let be_i = dot(y, &r) * ro;
                    axpy(&mut r, al - be_i, s);
                }
                st.d = r;
            }
            st.prev_flat_grad = Some(flat_grad.clone());
            st.prev_loss = loss;
            st.t = if st.n_iter == 1 {
                (1.0f64).min(1.0 / flat_grad.iter().map(|g| g.abs()).sum::<f64>()) * c.lr
            } else {
                c.lr
            };
            let gtd = dot(&flat_grad, &st.d);
            if gtd > -c.tolerance_change {
                break;
            }
            let mut ls_func_evals = 0;
            match c.line_search_fn {
                Some(LineSearch::StrongWolfe) => {
                    let start = Point {
                        t: 0.0,
                        f: loss,
                        g: flat_grad.clone(),
                        gtd,
                    };
                    let max_ls = max_eval.saturating_sub(current_evals);
                    let (point, evals) = self.strong_wolfe(closure, start, st.t, &st.d, max_ls)?;
                    (loss, flat_grad, st.t, ls_func_evals) = (point.f, point.g, point.t, evals);
                    self.add_grad(st.t, &st.d)?;
                    opt_cond = abs_max(&flat_grad) <= c.tolerance_grad;
                }
                None => {
                    self.add_grad(st.t, &st.d)?;
                    if n_iter != c.max_iter {
                        let (_, l, g) = self.evaluate(closure)?;
                        (loss, flat_grad) = (l, g);
                        opt_cond = abs_max(&flat_grad) <= c.tolerance_grad;
                        ls_func_evals = 1;
                    }
                }
            }
            current_evals += ls_func_evals;
            st.func_evals += ls_func_evals;
            if n_iter == c.max_iter || current_evals >= max_eval || opt_cond {
                break;
            }
            if abs_max(&st.d) * st.t.abs() <= c.tolerance_change {
                break;
            }
            if (loss - st.prev_loss).abs() < c.tolerance_change {
                break;
            }
        }
        self.state = st;
        Ok(orig_loss)
    }

    /// The state, for checkpoints: the flat vectors `state.0.d`, `state.0.prev_flat_grad`,
    /// `state.0.old_dirs.{k}` and `state.0.old_stps.{k}` (f64), the rest in `meta`.
    pub fn state_dict(&self) -> Result<OptimizerState<B>> {
        let st = &self.state;
        let Some(backend) = self
            .group
            .params
            .first()
            .map(|p| p.data().backend().clone())
        else {
            return Ok(OptimizerState {
                tensors: Vec::new(),
                meta: json!({"optimizer": OP}),
            });
        };
        let vector = |v: &[f64]| Tensor::from_vec(v.to_vec(), [v.len()], &backend);
        let mut tensors = Vec::new();
        if st.n_iter > 0 {
            tensors.push(("state.0.d".to_string(), vector(&st.d)?));
        }
        if let Some(g) = &st.prev_flat_grad {
            tensors.push(("state.0.prev_flat_grad".to_string(), vector(g)?));
        }
        for (k, (y, s)) in st.old_dirs.iter().zip(&st.old_stps).enumerate() {
            tensors.push((format!("state.0.old_dirs.{k}"), vector(y)?));
            tensors.push((format!("state.0.old_stps.{k}"), vector(s)?));
        }
        let mut group = self.group.options.to_json();
        if let Value::Object(m) = &mut group {
            m.insert(
                "params".into(),
                json!((0..self.group.params.len()).collect::<Vec<_>>()),
            );
        }
        let meta = json!({
            "optimizer": OP,
            "param_groups": [group],
            "state": {"0": {
                "func_evals": st.func_evals, "n_iter": st.n_iter, "t": st.t, "ro": st.ro,
                "H_diag": st.h_diag, "prev_loss": st.prev_loss,
            }},
        });
        Ok(OptimizerState { tensors, meta })
    }

    /// Restores a state saved by [`Lbfgs::state_dict`] over parameters of the same total size.
    pub fn load_state_dict(&mut self, saved: &OptimizerState<B>) -> Result<()> {
        const LOAD: &str = "LBFGS::load_state_dict";
        let meta = &saved.meta;
        let name = meta["optimizer"].as_str().unwrap_or("<missing>");
        if name != OP {
            return Err(Error::invalid(
                LOAD,
                format!("the state is of a {name} optimizer, not of LBFGS"),
            ));
        }
        let config = LbfgsConfig::from_json(&meta["param_groups"][0], "param_groups")?;
        let numel: usize = self.group.params.iter().map(Param::numel).sum();
        let get = |name: &str| -> Result<Option<Vec<f64>>> {
            let Some((_, t)) = saved.tensors.iter().find(|(n, _)| n == name) else {
                return Ok(None);
            };
            if t.numel() != numel {
                return Err(Error::invalid(
                    LOAD,
                    format!(
                        "`{name}` has {} elements, the parameters {numel}",
                        t.numel()
                    ),
                ));
            }
            to_host(t).map(Some)
        };
        let s = &meta["state"]["0"];
        let num = |k: &str| s[k].as_f64().unwrap_or(0.0);
        let ro: Vec<f64> = s["ro"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .collect();
        let mut st = History {
            func_evals: num("func_evals") as usize,
            n_iter: num("n_iter") as usize,
            d: get("state.0.d")?.unwrap_or_default(),
            t: num("t"),
            h_diag: num("H_diag"),
            prev_loss: num("prev_loss"),
            prev_flat_grad: get("state.0.prev_flat_grad")?,
            ..History::default()
        };
        for k in 0..ro.len() {
            let missing = || Error::invalid(LOAD, format!("correction pair {k} is missing"));
            st.old_dirs
                .push(get(&format!("state.0.old_dirs.{k}"))?.ok_or_else(missing)?);
            st.old_stps
                .push(get(&format!("state.0.old_stps.{k}"))?.ok_or_else(missing)?);
        }
        st.ro = ro;
        self.group.options = OptimOptions::Lbfgs(config.clone());
        self.config = config;
        self.state = st;
        Ok(())
    }
}
