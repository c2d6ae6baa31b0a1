//! A restricted unpickler for the `data.pkl` of `torch.save` archives: the binary opcodes of pickle
//! protocols 2 to 5 build plain values (numbers, strings, tuples, lists, dictionaries), and the only
//! callables it will apply are the few a state dict needs (`collections.OrderedDict`, PyTorch's
//! tensor-rebuilding functions, its storage classes and dtypes), as `torch.load(weights_only=True)`
//! allows. Any other global is refused by name, so a file can never run code. Every length is
//! checked against the bytes that remain, and the number of objects is bounded.

use nabla_core::DType;
use std::collections::HashMap;

/// The most objects (values pushed, container items) one pickle may create.
const MAX_OBJECTS: usize = 1 << 22;

/// A mutable container (list, dictionary or set) in the unpickler's arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Container(usize);

/// A storage named by a persistent id: `('storage', torch.FloatStorage, key, location, numel)`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StorageRef {
    /// The storage's file, `data/<key>` in the archive.
    pub key: String,
    /// The element type of the storage class.
    pub dtype: DType,
    /// Elements in the storage.
    pub numel: u64,
}

/// A tensor rebuilt by `torch._utils._rebuild_tensor_v2`: a strided view of a storage.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TensorRef {
    pub storage: StorageRef,
    /// Offset of the first element, in elements.
    pub offset: u64,
    pub size: Vec<u64>,
    pub stride: Vec<u64>,
}

/// The callables and classes the unpickler knows (its allow-list).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Global {
    /// `collections.OrderedDict`: called with no arguments, an empty dictionary.
    OrderedDict,
    /// `torch._utils._rebuild_tensor_v2` (and `_v3`, which names the dtype).
    RebuildTensor,
    /// `torch._utils._rebuild_parameter` (and `_with_state`): the tensor of a parameter.
    RebuildParameter,
    /// A typed storage class (`torch.FloatStorage`, ...) or a dtype (`torch.float32`, ...).
    DType(DType),
    /// `torch.Size`: its tuple.
    Size,
    /// `torch.device`: its name.
    Device,
    /// `_codecs.encode(text, 'latin1')`: how protocol 2 pickles `bytes`.
    Encode,
}

/// A value built by the unpickler.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Value>),
    /// A list or a set.
    List(Container),
    Dict(Container),
    Global(Global),
    Storage(StorageRef),
    Tensor(Box<TensorRef>),
}

/// The contents of a mutable container.
#[derive(Debug)]
pub(crate) enum Items {
    List(Vec<Value>),
    Dict(Vec<(Value, Value)>),
}

/// An unpickled object: the root value and the containers it refers to.
pub(crate) struct Unpickled {
    pub root: Value,
    arena: Vec<Items>,
}

impl Unpickled {
    /// The items of `c`.
    pub fn items(&self, c: Container) -> &Items {
        &self.arena[c.0]
    }
}

/// `module.name` of an allowed global, or an error naming it.
fn resolve_global(module: &str, name: &str) -> Result<Global, String> {
    let storage_dtype = |name: &str| {
        Some(match name {
            "FloatStorage" | "float32" | "float" => DType::F32,
            "DoubleStorage" | "float64" | "double" => DType::F64,
            "HalfStorage" | "float16" | "half" => DType::F16,
            "BFloat16Storage" | "bfloat16" => DType::BF16,
            "ComplexFloatStorage" | "complex64" | "cfloat" => DType::C64,
            "ComplexDoubleStorage" | "complex128" | "cdouble" => DType::C128,
            "LongStorage" | "int64" | "long" => DType::I64,
            "IntStorage" | "int32" | "int" => DType::I32,
            "ShortStorage" | "int16" | "short" => DType::I16,
            "CharStorage" | "int8" => DType::I8,
            "ByteStorage" | "uint8" => DType::U8,
            "uint16" => DType::U16,
            "uint32" => DType::U32,
            "uint64" => DType::U64,
            "BoolStorage" | "bool" => DType::Bool,
            _ => return None,
        })
    };
    Ok(match (module, name) {
        ("collections", "OrderedDict") => Global::OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2" | "_rebuild_tensor_v3") => Global::RebuildTensor,
        ("torch._utils", "_rebuild_parameter" | "_rebuild_parameter_with_state") => {
            Global::RebuildParameter
        }
        ("torch", "Size") => Global::Size,
        ("torch", "device") => Global::Device,
        ("_codecs", "encode") => Global::Encode,
        ("torch", name) if storage_dtype(name).is_some() => {
            Global::DType(storage_dtype(name).expect("checked"))
        }
        _ => {
            return Err(format!(
                "refusing the global `{module}.{name}`: only the classes and functions of PyTorch \
                 state dicts are allowed (as torch.load(weights_only=True)); a file that needs \
                 others may run code when loaded"
            ));
        }
    })
}

/// The unpickler's state: input, stack, marks, memo and arena.
struct Machine<'a> {
    input: &'a [u8],
    pos: usize,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
    arena: Vec<Items>,
    objects: usize,
}

type Step<T> = Result<T, String>;

impl<'a> Machine<'a> {
    fn take(&mut self, n: usize) -> Step<&'a [u8]> {
        let rest = &self.input[self.pos..];
        if n > rest.len() {
            return Err(format!(
                "truncated: {n} bytes wanted at byte {}, {} left",
                self.pos,
                rest.len()
            ));
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    fn take_array<const N: usize>(&mut self) -> Step<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    /// A length field of `width` bytes (little-endian), then that many bytes.
    fn take_counted(&mut self, width: usize) -> Step<&'a [u8]> {
        let mut len = [0u8; 8];
        len[..width].copy_from_slice(self.take(width)?);
        let n = usize::try_from(u64::from_le_bytes(len)).unwrap_or(usize::MAX);
        self.take(n)
    }

    fn text(&mut self, width: usize) -> Step<String> {
        let bytes = self.take_counted(width)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| format!("invalid UTF-8 before byte {}", self.pos))
    }

    /// A newline-terminated line (the text arguments of `GLOBAL`).
    fn line(&mut self) -> Step<String> {
        let rest = &self.input[self.pos..];
        let end = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| format!("unterminated line at byte {}", self.pos))?;
        self.pos += end + 1;
        String::from_utf8(rest[..end].to_vec())
            .map_err(|_| "invalid UTF-8 in a global's name".into())
    }

    fn count(&mut self, n: usize) -> Step<()> {
        self.objects += n;
        if self.objects > MAX_OBJECTS {
            return Err(format!("more than {MAX_OBJECTS} objects"));
        }
        Ok(())
    }

    fn push(&mut self, value: Value) -> Step<()> {
        self.count(1)?;
        self.stack.push(value);
        Ok(())
    }

    fn pop(&mut self) -> Step<Value> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(format!("stack underflow at byte {}", self.pos));
        }
        Ok(self.stack.pop().expect("checked"))
    }

    fn top(&self) -> Step<&Value> {
        self.stack
            .last()
            .ok_or_else(|| format!("stack underflow at byte {}", self.pos))
    }

    /// The values pushed since the last mark, removing the mark.
    fn pop_mark(&mut self) -> Step<Vec<Value>> {
        let mark = self
            .marks
            .pop()
            .ok_or_else(|| format!("no mark at byte {}", self.pos))?;
        Ok(self.stack.split_off(mark))
    }

    fn new_container(&mut self, items: Items) -> Container {
        self.arena.push(items);
        Container(self.arena.len() - 1)
    }

    /// Appends `values` to the list or set `target`.
    fn extend_list(&mut self, target: &Value, values: Vec<Value>) -> Step<()> {
        self.count(values.len())?;
        match target {
            Value::List(c) => match &mut self.arena[c.0] {
                Items::List(items) => items.extend(values),
                Items::Dict(_) => unreachable!("a list value names a list"),
            },
            other => return Err(format!("appending to {}", describe(other))),
        }
        Ok(())
    }

    /// Sets `pairs` (key, value, key, value, ...) in the dictionary `target`.
    fn extend_dict(&mut self, target: &Value, pairs: Vec<Value>) -> Step<()> {
        if !pairs.len().is_multiple_of(2) {
            return Err("an odd number of values for dictionary items".into());
        }
        self.count(pairs.len())?;
        let Value::Dict(c) = target else {
            return Err(format!("setting items of {}", describe(target)));
        };
        let Items::Dict(items) = &mut self.arena[c.0] else {
            unreachable!("a dict value names a dict")
        };
        // Kept in order with repeats: a key set twice is resolved (the last wins) when the file's
        // names are collected, in one pass.
        let mut it = pairs.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            items.push((k, v));
        }
        Ok(())
    }

    fn memo_put(&mut self, index: u32) -> Step<()> {
        let value = self.top()?.clone();
        self.count(1)?;
        self.memo.insert(index, value);
        Ok(())
    }

    fn memo_get(&mut self, index: u32) -> Step<()> {
        let value = self
            .memo
            .get(&index)
            .cloned()
            .ok_or_else(|| format!("memo entry {index} is not set"))?;
        self.push(value)
    }
}

/// What a value is, for errors.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::None => "None",
        Value::Bool(_) => "a bool",
        Value::Int(_) => "an int",
        Value::Float(_) => "a float",
        Value::Str(_) => "a string",
        Value::Bytes(_) => "bytes",
        Value::Tuple(_) => "a tuple",
        Value::List(_) => "a list",
        Value::Dict(_) => "a dict",
        Value::Global(_) => "a class or function",
        Value::Storage(_) => "a storage",
        Value::Tensor(_) => "a tensor",
    }
}

/// A non-negative integer argument, or an error naming `what`.
fn unsigned(value: &Value, what: &str) -> Step<u64> {
    match value {
        Value::Int(i) if *i >= 0 => Ok(*i as u64),
        other => Err(format!(
            "{what} is {}, not a non-negative int",
            describe(other)
        )),
    }
}

/// A tuple of non-negative integers (a size or a stride).
fn dims(value: &Value, what: &str) -> Step<Vec<u64>> {
    match value {
        Value::Tuple(items) => items.iter().map(|v| unsigned(v, what)).collect(),
        other => Err(format!("{what} is {}, not a tuple", describe(other))),
    }
}

/// `persistent_load(pid)`: `('storage', storage class, key, location, numel)`.
fn persistent_load(pid: Value) -> Step<Value> {
    let Value::Tuple(items) = pid else {
        return Err(format!(
            "a persistent id is {}, not a tuple",
            describe(&pid)
        ));
    };
    match items.as_slice() {
        [
            Value::Str(kind),
            Value::Global(Global::DType(dtype)),
            Value::Str(key),
            _,
            numel,
        ] if kind == "storage" => Ok(Value::Storage(StorageRef {
            key: key.clone(),
            dtype: *dtype,
            numel: unsigned(numel, "a storage's size")?,
        })),
        _ => Err("a persistent id that is not ('storage', type, key, location, size)".into()),
    }
}

/// Applies the allowed callable `global` to `args`.
fn call(m: &mut Machine<'_>, global: Global, args: Vec<Value>) -> Step<Value> {
    let arity = |n: usize| -> Step<()> {
        if args.len() < n {
            return Err(format!("{global:?} called with {} arguments", args.len()));
        }
        Ok(())
    };
    Ok(match global {
        Global::OrderedDict => {
            if !args.is_empty() {
                return Err("OrderedDict called with arguments".into());
            }
            Value::Dict(m.new_container(Items::Dict(Vec::new())))
        }
        Global::RebuildTensor => {
            arity(4)?;
            let Value::Storage(mut storage) = args[0].clone() else {
                return Err(format!("a tensor's storage is {}", describe(&args[0])));
            };
            // `_rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype)`
            if let Some(Value::Global(Global::DType(dtype))) = args.get(6) {
                storage.dtype = *dtype;
            }
            let (size, stride) = (dims(&args[2], "a size")?, dims(&args[3], "a stride")?);
            if size.len() != stride.len() {
                return Err(format!("a size {size:?} with a stride {stride:?}"));
            }
            Value::Tensor(Box::new(TensorRef {
                storage,
                offset: unsigned(&args[1], "a storage offset")?,
                size,
                stride,
            }))
        }
        Global::RebuildParameter => {
            arity(1)?;
            match &args[0] {
                t @ Value::Tensor(_) => t.clone(),
                other => return Err(format!("a parameter's data is {}", describe(other))),
            }
        }
        Global::Size => match args.as_slice() {
            [t @ Value::Tuple(_)] => t.clone(),
            _ => return Err("torch.Size called without one tuple".into()),
        },
        Global::Device => match args.first() {
            Some(s @ Value::Str(_)) => s.clone(),
            _ => return Err("torch.device called without a name".into()),
        },
        Global::Encode => match args.first() {
            Some(Value::Str(s)) => Value::Bytes(s.chars().map(|c| c as u32 as u8).collect()),
            _ => return Err("_codecs.encode called without a string".into()),
        },
        Global::DType(_) => return Err("a storage class or dtype called".into()),
    })
}

/// Unpickles `input` with the allow-list of [`resolve_global`].
pub(crate) fn unpickle(input: &[u8]) -> Result<Unpickled, String> {
    let mut m = Machine {
        input,
        pos: 0,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        arena: Vec::new(),
        objects: 0,
    };
    loop {
        let at = m.pos;
        let [op] = m.take_array::<1>()?;
        if op == b'.' {
            let root = m.pop()?;
            return Ok(Unpickled {
                root,
                arena: m.arena,
            });
        }
        step(&mut m, op).map_err(|e| {
            if e.contains("byte") {
                e
            } else {
                format!("{e} (opcode 0x{op:02x} at byte {at})")
            }
        })?;
    }
}

/// Runs one opcode (other than `STOP`).
fn step(m: &mut Machine<'_>, op: u8) -> Step<()> {
    if literal(m, op)? || structure(m, op)? || object(m, op)? {
        return Ok(());
    }
    Err(format!("unsupported pickle opcode 0x{op:02x}"))
}

/// The protocol and frame opcodes and those that push a number, a string or bytes; `false` for
/// any other.
fn literal(m: &mut Machine<'_>, op: u8) -> Step<bool> {
    match op {
        0x80 => {
            let [proto] = m.take_array::<1>()?;
            if !(2..=5).contains(&proto) {
                return Err(format!("pickle protocol {proto} (2 to 5 are read)"));
            }
        }
        0x95 => {
            m.take(8)?; // FRAME: a length hint
        }
        b'N' => m.push(Value::None)?,
        0x88 => m.push(Value::Bool(true))?,
        0x89 => m.push(Value::Bool(false))?,
        b'J' => {
            let v = i32::from_le_bytes(m.take_array()?);
            m.push(Value::Int(v as i64))?;
        }
        b'K' => {
            let [v] = m.take_array::<1>()?;
            m.push(Value::Int(v as i64))?;
        }
        b'M' => {
            let v = u16::from_le_bytes(m.take_array()?);
            m.push(Value::Int(v as i64))?;
        }
        0x8a => {
            let bytes = m.take_counted(1)?;
            if bytes.len() > 8 {
                return Err(format!("an integer of {} bytes", bytes.len()));
            }
            let fill = if bytes.last().is_some_and(|b| b & 0x80 != 0) {
                0xff
            } else {
                0
            };
            let mut le = [fill; 8];
            le[..bytes.len()].copy_from_slice(bytes);
            m.push(Value::Int(i64::from_le_bytes(le)))?;
        }
        b'G' => {
            let v = f64::from_be_bytes(m.take_array()?);
            m.push(Value::Float(v))?;
        }
        b'X' => {
            let s = m.text(4)?;
            m.push(Value::Str(s))?;
        }
        0x8c => {
            let s = m.text(1)?;
            m.push(Value::Str(s))?;
        }
        0x8d => {
            let s = m.text(8)?;
            m.push(Value::Str(s))?;
        }
        b'T' | b'U' | b'B' | b'C' | 0x8e | 0x96 => {
            let width = match op {
                b'U' | b'C' => 1,
                b'T' | b'B' => 4,
                _ => 8,
            };
            let bytes = m.take_counted(width)?.to_vec();
            m.push(Value::Bytes(bytes))?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The opcodes of marks, the stack and containers (tuples, lists, sets, dictionaries); `false` for
/// any other.
fn structure(m: &mut Machine<'_>, op: u8) -> Step<bool> {
    match op {
        b'(' => m.marks.push(m.stack.len()),
        b'0' => {
            m.pop()?;
        }
        b'1' => {
            m.pop_mark()?;
        }
        b'2' => {
            let top = m.top()?.clone();
            m.push(top)?;
        }
        b')' => m.push(Value::Tuple(Vec::new()))?,
        b't' => {
            let items = m.pop_mark()?;
            m.push(Value::Tuple(items))?;
        }
        0x85..=0x87 => {
            let n = (op - 0x84) as usize;
            let mut items = (0..n).map(|_| m.pop()).collect::<Step<Vec<_>>>()?;
            items.reverse();
            m.push(Value::Tuple(items))?;
        }
        b']' | 0x8f => {
            let c = m.new_container(Items::List(Vec::new()));
            m.push(Value::List(c))?;
        }
        b'l' | 0x91 => {
            let items = m.pop_mark()?;
            m.count(items.len())?;
            let c = m.new_container(Items::List(items));
            m.push(Value::List(c))?;
        }
        b'a' => {
            let value = m.pop()?;
            let target = m.top()?.clone();
            m.extend_list(&target, vec![value])?;
        }
        b'e' | 0x90 => {
            let values = m.pop_mark()?;
            let target = m.top()?.clone();
            m.extend_list(&target, values)?;
        }
        b'}' => {
            let c = m.new_container(Items::Dict(Vec::new()));
            m.push(Value::Dict(c))?;
        }
        b'd' => {
            let pairs = m.pop_mark()?;
            let dict = Value::Dict(m.new_container(Items::Dict(Vec::new())));
            m.extend_dict(&dict, pairs)?;
            m.push(dict)?;
        }
        b's' => {
            let value = m.pop()?;
            let key = m.pop()?;
            let target = m.top()?.clone();
            m.extend_dict(&target, vec![key, value])?;
        }
        b'u' => {
            let pairs = m.pop_mark()?;
            let target = m.top()?.clone();
            m.extend_dict(&target, pairs)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The opcodes of globals, calls, persistent ids and the memo; `false` for any other.
fn object(m: &mut Machine<'_>, op: u8) -> Step<bool> {
    match op {
        b'c' => {
            let (module, name) = (m.line()?, m.line()?);
            m.push(Value::Global(resolve_global(&module, &name)?))?;
        }
        0x93 => {
            let name = m.pop()?;
            let module = m.pop()?;
            let (Value::Str(module), Value::Str(name)) = (module, name) else {
                return Err("STACK_GLOBAL without two strings".into());
            };
            m.push(Value::Global(resolve_global(&module, &name)?))?;
        }
        b'R' | 0x81 | 0x92 => {
            if op == 0x92 {
                m.pop()?; // NEWOBJ_EX's keyword arguments
            }
            let args = m.pop()?;
            let callable = m.pop()?;
            let (Value::Global(global), Value::Tuple(args)) = (&callable, args) else {
                return Err(format!("calling {}", describe(&callable)));
            };
            let result = call(m, *global, args)?;
            m.push(result)?;
        }
        b'b' => {
            // BUILD: an OrderedDict's `_metadata` or a parameter's state; neither holds tensors a
            // state dict needs.
            let _state = m.pop()?;
            match m.top()? {
                Value::Dict(_) | Value::Tensor(_) => {}
                other => return Err(format!("setting the state of {}", describe(other))),
            }
        }
        b'Q' => {
            let pid = m.pop()?;
            let storage = persistent_load(pid)?;
            m.push(storage)?;
        }
        // BINPUT and BINGET name the slot in one byte, LONG_BINPUT and LONG_BINGET in four;
        // MEMOIZE takes the next free one.
        b'q' | b'h' => {
            let [i] = m.take_array::<1>()?;
            memo(m, op == b'q', u32::from(i))?;
        }
        b'r' | b'j' => {
            let i = u32::from_le_bytes(m.take_array()?);
            memo(m, op == b'r', i)?;
        }
        0x94 => {
            let i = u32::try_from(m.memo.len()).map_err(|_| "memo overflow")?;
            m.memo_put(i)?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Stores the top of the stack in memo slot `i` (`put`) or pushes slot `i`'s value.
fn memo(m: &mut Machine<'_>, put: bool, i: u32) -> Step<()> {
    if put { m.memo_put(i) } else { m.memo_get(i) }
}
