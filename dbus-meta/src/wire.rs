//! The decoder: a bounds-checked reader of D-Bus message bodies that decodes straight into
//! [`Value`]s. It is the workspace's one decoder: `netmirror-client-cache` reads every reply and
//! signal with it, and [`Value::from_variant`] goes through it too.
//!
//! A client cache reads `a{oa{sa{sv}}}` (GetManagedObjects), `a{sa{sv}}` (properties, settings) and
//! variants on its own instead of going through serde and an owned value tree per property:
//! a variant's signature is compared as bytes with the declared one, and the value is decoded
//! once, into its final storage. Every read is checked; a malformed body is an error, never a
//! panic.

use crate::value::{Array, Dict, Value};

/// Decoding failed: the body does not hold what its signature says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError(String);

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// What a [`Reader`] returns.
pub type WireResult<T> = Result<T, WireError>;

fn err<T>(what: &str) -> WireResult<T> {
    Err(WireError(what.to_owned()))
}

const MAX_DEPTH: u32 = 64;

/// A cursor over a body. Positions are relative to the body's start, which D-Bus aligns to 8.
#[derive(Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    little: bool,
}

impl<'a> Reader<'a> {
    /// A reader of `buf`, a body in little (`true`) or big endian.
    pub fn new(buf: &'a [u8], little: bool) -> Self {
        Self {
            buf,
            pos: 0,
            little,
        }
    }

    /// The reader of a zbus message's body.
    pub fn for_body(body: &'a zbus::wire::serialized::Data<'static, 'static>) -> Self {
        let little = matches!(body.context().endian(), zbus::wire::Endian::Little);
        Self::new(body.bytes(), little)
    }

    /// The offset in the body of the next byte to read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Skip the padding to the next multiple of `n`.
    #[inline]
    pub fn align(&mut self, n: usize) -> WireResult<()> {
        let aligned = self.pos.div_ceil(n) * n;
        if aligned > self.buf.len() {
            return err("padding past the end of the body");
        }
        self.pos = aligned;
        Ok(())
    }

    #[inline]
    fn take(&mut self, n: usize) -> WireResult<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end {
            Some(end) => {
                let s = &self.buf[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => err("value past the end of the body"),
        }
    }

    /// `N` bytes at the next multiple of `N` (a power of two), in the body's byte order: one
    /// bounds check for the padding and the value together.
    #[inline]
    fn fixed<const N: usize>(&mut self) -> WireResult<[u8; N]> {
        let start = self.pos.next_multiple_of(N);
        let Some(mut a) = self
            .buf
            .get(start..start.saturating_add(N))
            .and_then(|s| <[u8; N]>::try_from(s).ok())
        else {
            return if start > self.buf.len() {
                err("padding past the end of the body")
            } else {
                err("value past the end of the body")
            };
        };
        self.pos = start + N;
        if !self.little {
            a.reverse();
        }
        Ok(a)
    }

    /// A `y`.
    #[inline]
    pub fn u8(&mut self) -> WireResult<u8> {
        Ok(self.take(1)?[0])
    }
    /// A `q` (or the bits of an `n`).
    #[inline]
    pub fn u16(&mut self) -> WireResult<u16> {
        self.fixed::<2>().map(u16::from_le_bytes)
    }
    /// A `u` (or the bits of an `i`).
    #[inline]
    pub fn u32(&mut self) -> WireResult<u32> {
        self.fixed::<4>().map(u32::from_le_bytes)
    }
    /// A `t` (or the bits of an `x` or a `d`).
    #[inline]
    pub fn u64(&mut self) -> WireResult<u64> {
        self.fixed::<8>().map(u64::from_le_bytes)
    }

    /// A `b`.
    #[inline]
    pub fn bool(&mut self) -> WireResult<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => err("boolean neither 0 nor 1"),
        }
    }

    /// A string or object path.
    #[inline]
    pub fn str(&mut self) -> WireResult<&'a str> {
        let len = self.u32()? as usize;
        // The text and its terminating nul, with one bounds check.
        let Some((&0, bytes)) = self.take(len.saturating_add(1))?.split_last() else {
            return err("string without its terminating nul");
        };
        std::str::from_utf8(bytes).or_else(|_| err("string is not UTF-8"))
    }

    /// A signature's bytes.
    #[inline]
    pub fn sig(&mut self) -> WireResult<&'a [u8]> {
        let len = self.u8()? as usize;
        let Some((&0, bytes)) = self.take(len + 1)?.split_last() else {
            return err("signature without its terminating nul");
        };
        Ok(bytes)
    }

    /// A variant's signature, checked to be exactly one complete, well-formed type: the one
    /// place a signature read from the data is checked before its value is read.
    fn variant_sig(&mut self) -> WireResult<&'a [u8]> {
        let sig = self.sig()?;
        if sig.is_empty() || single_type_len(sig)? != sig.len() {
            return err("variant signature is not one complete type");
        }
        Ok(sig)
    }

    /// Start an array whose elements align to `elem_align`: returns the end position.
    #[inline]
    pub fn array(&mut self, elem_align: usize) -> WireResult<usize> {
        let len = self.u32()? as usize;
        if len > 1 << 26 {
            return err("array longer than 64 MiB");
        }
        self.align(elem_align)?;
        let end = self.pos + len;
        if end > self.buf.len() {
            return err("array past the end of the body");
        }
        Ok(end)
    }

    /// Whether the array ending at `end` has more elements; aligns to `align` first.
    #[inline]
    pub fn more(&mut self, end: usize, align: usize) -> WireResult<bool> {
        if self.pos >= end {
            if self.pos > end {
                return err("array element overruns its array");
            }
            return Ok(false);
        }
        self.align(align)?;
        Ok(true)
    }

    /// Read one value of the single complete type `sig`.
    pub fn value(&mut self, sig: &[u8]) -> WireResult<Value> {
        let n = single_type_len(sig)?;
        self.value_at(&sig[..n], 0)
    }

    /// Pass over one value of the single complete type `sig` without decoding it: nothing is
    /// allocated, an array is passed by its length (its elements are not looked at), a
    /// variant's signature and a string's terminating nul are checked. For a reader that keeps
    /// only some of a body's values (the rest cost no [`Value`]s).
    pub fn skip(&mut self, sig: &[u8]) -> WireResult<()> {
        let n = single_type_len(sig)?;
        self.skip_at(&sig[..n], 0)
    }

    /// [`skip`](Self::skip) of `sig`, which is exactly one complete, well-formed type: its
    /// callers cut it with [`single_type_len`] (which checks it), so it is not checked again
    /// at every level.
    fn skip_at(&mut self, sig: &[u8], depth: u32) -> WireResult<()> {
        if depth > MAX_DEPTH {
            return err("values nested too deep");
        }
        let Some(&code) = sig.first() else {
            return err("empty signature");
        };
        match code {
            b'y' => {
                self.u8()?;
            }
            b'n' | b'q' => {
                self.u16()?;
            }
            b'b' | b'i' | b'u' | b'h' => {
                self.u32()?;
            }
            b'x' | b't' | b'd' => {
                self.u64()?;
            }
            b's' | b'o' => {
                let len = self.u32()? as usize;
                self.take(len)?;
                if self.take(1)? != [0] {
                    return err("string without its terminating nul");
                }
            }
            b'g' => {
                self.sig()?;
            }
            b'v' => {
                let inner = self.variant_sig()?;
                self.skip_at(inner, depth + 1)?;
            }
            b'(' => {
                self.align(8)?;
                let mut rest = &sig[1..sig.len().saturating_sub(1)];
                while !rest.is_empty() {
                    let n = single_type_len(rest)?;
                    self.skip_at(&rest[..n], depth + 1)?;
                    rest = &rest[n..];
                }
            }
            b'a' => {
                let end = self.array(alignment(&sig[1..]))?;
                self.pos = end;
            }
            _ => return err("unknown type code in signature"),
        }
        Ok(())
    }

    /// Read a variant whose content must have signature `expected` (or any, if `None`).
    /// Returns `Ok(Err(actual))` when the types differ (the value is skipped).
    pub fn variant_expect(&mut self, expected: Option<&[u8]>) -> WireResult<Result<Value, String>> {
        let sig = self.variant_sig()?;
        let value = self.value_at(sig, 1)?;
        match expected {
            Some(want) if want != sig => Ok(Err(String::from_utf8_lossy(sig).into_owned())),
            _ => Ok(Ok(value)),
        }
    }

    /// [`value`](Self::value) of `sig`, which is exactly one complete, well-formed type, as
    /// the slicing below relies on: every caller cuts it with [`single_type_len`] (which
    /// checks it) or takes it from a type so cut, so it is not checked again at every level.
    fn value_at(&mut self, sig: &[u8], depth: u32) -> WireResult<Value> {
        if depth > MAX_DEPTH {
            return err("values nested too deep");
        }
        let Some(&code) = sig.first() else {
            return err("empty signature");
        };
        Ok(match code {
            b'y' => Value::U8(self.u8()?),
            b'b' => Value::Bool(self.bool()?),
            b'n' => Value::I16(self.u16()? as i16),
            b'q' => Value::U16(self.u16()?),
            b'i' => Value::I32(self.u32()? as i32),
            b'u' => Value::U32(self.u32()?),
            b'h' => Value::Fd(self.u32()?),
            b'x' => Value::I64(self.u64()? as i64),
            b't' => Value::U64(self.u64()?),
            b'd' => Value::F64(f64::from_bits(self.u64()?)),
            b's' => Value::Str(self.str()?.into()),
            b'o' => Value::Path(self.str()?.into()),
            b'g' => Value::Signature(String::from_utf8_lossy(self.sig()?).into()),
            b'v' => {
                let inner = self.variant_sig()?;
                Value::Variant(Box::new(self.value_at(inner, depth + 1)?))
            }
            b'(' => {
                self.align(8)?;
                let mut fields = Vec::new();
                let mut rest = &sig[1..sig.len().saturating_sub(1)];
                while !rest.is_empty() {
                    let n = single_type_len(rest)?;
                    fields.push(self.value_at(&rest[..n], depth + 1)?);
                    rest = &rest[n..];
                }
                Value::Struct(fields.into_boxed_slice())
            }
            b'a' => self.array_value(&sig[1..], depth)?,
            _ => return err("unknown type code in signature"),
        })
    }

    fn array_value(&mut self, elem: &[u8], depth: u32) -> WireResult<Value> {
        /// The elements without the room a growing vector keeps: decoded values live as long
        /// as the cache holds them (a profile's settings are dictionaries of a few entries,
        /// where the spare room was about a third of their memory).
        fn exact<T>(mut items: Vec<T>) -> Vec<T> {
            items.shrink_to_fit();
            items
        }
        let align = alignment(elem);
        let end = self.array(align)?;
        let items_left = |this: &mut Self| this.more(end, align);
        Ok(match elem {
            b"y" => {
                let bytes = self.take(end - self.pos)?;
                Value::Bytes(bytes.into())
            }
            b"s" | b"o" => {
                let mut v = Vec::new();
                while items_left(self)? {
                    v.push(Box::<str>::from(self.str()?));
                }
                if elem == b"s" {
                    Value::Strs(v.into())
                } else {
                    Value::Paths(v.into())
                }
            }
            b"v" => {
                // Bytes as long as every element is a `y`; boxed variants from the first other.
                let mut bytes = Vec::new();
                let mut items: Option<Vec<Value>> = None;
                while items_left(self)? {
                    let inner = self.variant_sig()?;
                    match (&mut items, inner) {
                        (None, b"y") => bytes.push(self.u8()?),
                        (None, _) => {
                            let mut all: Vec<Value> = std::mem::take(&mut bytes)
                                .into_iter()
                                .map(|b| Value::Variant(Box::new(Value::U8(b))))
                                .collect();
                            all.push(Value::Variant(Box::new(self.value_at(inner, depth + 2)?)));
                            items = Some(all);
                        }
                        (Some(all), _) => {
                            all.push(Value::Variant(Box::new(self.value_at(inner, depth + 2)?)))
                        }
                    }
                }
                match items {
                    None if !bytes.is_empty() => Value::VariantBytes(bytes.into()),
                    items => Value::Array(Box::new(Array {
                        element: "v".into(),
                        items: exact(items.unwrap_or_default()),
                    })),
                }
            }
            b"u" => {
                let mut v = Vec::new();
                while items_left(self)? {
                    v.push(self.u32()?);
                }
                Value::U32s(v.into())
            }
            [b'{', ..] => {
                // `elem` is a checked `{kv}`: at least four bytes.
                let inner = &elem[1..elem.len() - 1];
                let klen = single_type_len(inner)?;
                let (k, v) = inner.split_at(klen);
                let mut entries = Vec::new();
                while items_left(self)? {
                    let key = self.value_at(k, depth + 1)?;
                    let value = self.value_at(v, depth + 1)?;
                    entries.push((key, value));
                }
                Value::Dict(Box::new(Dict {
                    key: String::from_utf8_lossy(k).into(),
                    value: String::from_utf8_lossy(v).into(),
                    entries: exact(entries),
                }))
            }
            _ => {
                let mut items = Vec::new();
                while items_left(self)? {
                    items.push(self.value_at(elem, depth + 1)?);
                }
                Value::Array(Box::new(Array {
                    element: String::from_utf8_lossy(elem).into(),
                    items: exact(items),
                }))
            }
        })
    }
}

/// The alignment of the first type in `sig`.
pub fn alignment(sig: &[u8]) -> usize {
    match sig.first() {
        Some(b'n' | b'q') => 2,
        Some(b'b' | b'i' | b'u' | b'h' | b's' | b'o' | b'a') => 4,
        Some(b'x' | b't' | b'd' | b'(' | b'{') => 8,
        _ => 1,
    }
}

/// Whether `c` alone is a complete type: a basic type or a variant.
#[inline]
fn is_basic_or_variant(c: u8) -> bool {
    matches!(
        c,
        b'y' | b'b'
            | b'n'
            | b'q'
            | b'i'
            | b'u'
            | b'x'
            | b't'
            | b'd'
            | b'h'
            | b's'
            | b'o'
            | b'g'
            | b'v'
    )
}

/// The length of the first single complete type in `sig`.
#[inline]
pub fn single_type_len(sig: &[u8]) -> WireResult<usize> {
    // Most values are of one basic type: those need no walk.
    match sig.first() {
        Some(&c) if is_basic_or_variant(c) => Ok(1),
        _ => container_type_len(sig),
    }
}

/// [`single_type_len`] of a signature that does not start with a basic type or a variant.
fn container_type_len(sig: &[u8]) -> WireResult<usize> {
    // A step returns a one-byte error, so its result comes back in registers.
    #[derive(Clone, Copy)]
    enum Bad {
        TooDeep,
        StructOrDictEntry,
        Unterminated,
        Code,
    }
    fn go(sig: &[u8], depth: u32) -> Result<usize, Bad> {
        if depth > MAX_DEPTH {
            return Err(Bad::TooDeep);
        }
        match sig.first() {
            Some(&c) if is_basic_or_variant(c) => Ok(1),
            Some(b'a') => Ok(1 + go(&sig[1..], depth + 1)?),
            Some(&open @ (b'(' | b'{')) => {
                let close = if open == b'(' { b')' } else { b'}' };
                let mut i = 1;
                let mut fields = 0;
                loop {
                    match sig.get(i) {
                        Some(&c) if c == close => {
                            if fields == 0 || (open == b'{' && fields != 2) {
                                return Err(Bad::StructOrDictEntry);
                            }
                            return Ok(i + 1);
                        }
                        Some(_) => {
                            i += go(&sig[i..], depth + 1)?;
                            fields += 1;
                        }
                        None => return Err(Bad::Unterminated),
                    }
                }
            }
            _ => Err(Bad::Code),
        }
    }
    go(sig, 0).or_else(|bad| {
        err(match bad {
            Bad::TooDeep => "signature nested too deep",
            Bad::StructOrDictEntry => "bad struct or dict entry signature",
            Bad::Unterminated => "unterminated struct or dict entry signature",
            Bad::Code => "bad signature",
        })
    })
}

#[cfg(test)]
mod tests;
