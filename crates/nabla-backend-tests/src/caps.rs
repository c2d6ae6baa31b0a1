//! What a backend supports, and how closely its float results must match the references.

use nabla_core::DType;

/// Tolerance of a float comparison: `|actual - expected| <= atol + rtol * |expected|`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
}

impl Tolerance {
    /// The larger of two tolerances, component by component.
    ///
    /// ```
    /// use nabla_backend_tests::Tolerance;
    /// let t = Tolerance { rtol: 1e-6, atol: 0.0 }.max(Tolerance { rtol: 0.0, atol: 1e-5 });
    /// assert_eq!(t, Tolerance { rtol: 1e-6, atol: 1e-5 });
    /// ```
    pub fn max(self, other: Tolerance) -> Tolerance {
        Tolerance {
            rtol: self.rtol.max(other.rtol),
            atol: self.atol.max(other.atol),
        }
    }
}

/// What a backend supports: its dtypes, the float tolerances its results need on top of the suite's own
/// (a GPU's `exp`, `sin` or summation order differ from the CPU's), and whether float results are
/// bit-exact where IEEE 754 makes them so.
///
/// ```
/// use nabla_backend_tests::Capabilities;
/// use nabla_core::DType;
/// let gpu = Capabilities::new(&[DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool])
///     .with_tolerance(DType::F32, 1e-4, 1e-5)
///     .inexact_floats();
/// assert!(!gpu.supports(DType::F64));
/// assert_eq!(gpu.tolerance(DType::F32).rtol, 1e-4);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    dtypes: Vec<DType>,
    tolerances: Vec<(DType, Tolerance)>,
    exact_floats: bool,
    flushes_subnormals: bool,
}

impl Capabilities {
    /// Every dtype, no extra tolerance, bit-exact IEEE results: the CPU reference backend.
    pub fn all() -> Capabilities {
        Capabilities::new(&DType::ALL)
    }

    /// Exactly `dtypes`, no extra tolerance, bit-exact IEEE results.
    pub fn new(dtypes: &[DType]) -> Capabilities {
        Capabilities {
            dtypes: dtypes.to_vec(),
            tolerances: Vec::new(),
            exact_floats: true,
            flushes_subnormals: false,
        }
    }

    /// Float results of `dtype` (and its complex counterpart) may differ from the references by
    /// `atol + rtol * |expected|`, on top of each check's own tolerance.
    pub fn with_tolerance(mut self, dtype: DType, rtol: f64, atol: f64) -> Capabilities {
        self.tolerances.retain(|(d, _)| *d != dtype);
        self.tolerances.push((dtype, Tolerance { rtol, atol }));
        self
    }

    /// Float results that IEEE 754 defines exactly (a division, a square root, a cast) may still round
    /// differently (WGSL allows 2.5 ULP for division, for example): the fixture cases marked bit-exact
    /// are then compared with the dtype's tolerance instead.
    pub fn inexact_floats(mut self) -> Capabilities {
        self.exact_floats = false;
        self
    }

    /// float32 subnormals (magnitudes below 2^-126) read as zeros of their sign in arithmetic, as on
    /// NVIDIA's GPUs under Vulkan: each element of a fixture case with subnormal inputs may match
    /// NumPy's result on flushed inputs (flushed in turn) instead of the plain one.
    pub fn flushing_subnormals(mut self) -> Capabilities {
        self.flushes_subnormals = true;
        self
    }

    /// `true` if float32 subnormals may be flushed to zero (see [`Capabilities::flushing_subnormals`]).
    pub fn flushes_subnormals(&self) -> bool {
        self.flushes_subnormals
    }

    /// `true` if the backend holds buffers of `dtype`.
    pub fn supports(&self, dtype: DType) -> bool {
        self.dtypes.contains(&dtype)
    }

    /// The dtypes the backend holds.
    pub fn dtypes(&self) -> &[DType] {
        &self.dtypes
    }

    /// The extra tolerance granted to float results of `dtype` (zero unless set).
    pub fn tolerance(&self, dtype: DType) -> Tolerance {
        let real = match dtype {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        };
        self.tolerances
            .iter()
            .find(|(d, _)| *d == dtype || *d == real)
            .map(|(_, t)| *t)
            .unwrap_or_default()
    }

    /// `true` if IEEE-exact float results are bit-exact on this backend.
    pub fn exact_floats(&self) -> bool {
        self.exact_floats
    }
}
