//! [`CdrType`] for the primitives, `String`, `Vec<T>` and `[T; N]`.

use core::mem::MaybeUninit;

use super::traits::{extent_primitive, extent_repeat, extent_then, KeyExtent};
use super::{CdrError, CdrReader, CdrType, CdrWriter};
use crate::filter::{NotFilterable, Step, Value};
use crate::xtypes::{Primitive, TypeDesc};

/// A scalar's value: the path ends here (anything deeper was refused by the checker).
fn leaf<'a>(path: &[Step], v: Value<'a>) -> Result<Value<'a>, NotFilterable> {
    if path.is_empty() {
        Ok(v)
    } else {
        Err(NotFilterable)
    }
}

/// Element `path[0]` of a sequence or array, then the rest of the path inside it; absent
/// past the end.
fn element<'a, T: CdrType>(items: &'a [T], path: &[Step]) -> Result<Value<'a>, NotFilterable> {
    match path.split_first() {
        Some((Step::Index(i), rest)) => match items.get(*i as usize) {
            Some(x) => x.filter_value(rest),
            None => Ok(Value::Absent),
        },
        _ => Err(NotFilterable),
    }
}

macro_rules! impl_numeric {
    ($($t:ty => $w:ident, $r:ident, $size:expr, $prim:ident, $plain:expr;)*) => {$(
        impl CdrType for $t {
            const MIN_SIZE: usize = $size;
            const PLAIN_LAYOUT: u64 = if $plain {
                super::plain::layout_hash(
                    stringify!($t),
                    core::mem::size_of::<$t>(),
                    core::mem::align_of::<$t>(),
                )
            } else {
                0
            };
            const KEY_EXTENT: KeyExtent = extent_primitive($size);
            const IS_PRIMITIVE: bool = true;
            const FLAT: Option<(usize, usize)> = if $plain { Some(($size, 1)) } else { None };
            const XCDR2_LC: u32 = ($size as u32).trailing_zeros();
            const FILTERABLE: bool = true;
            fn type_desc() -> TypeDesc {
                TypeDesc::Primitive(Primitive::$prim)
            }
            fn filter_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable> {
                leaf(path, Value::from(*self))
            }
            #[inline]
            fn write_cdr(&self, w: &mut CdrWriter<'_>) {
                w.$w(*self)
            }
            #[inline]
            fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
                r.$r()
            }
            #[inline]
            fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
                w.$w(r.$r()?);
                Ok(())
            }
        }
    )*};
}

impl_numeric! {
    i8 => write_i8, read_i8, 1, Int8, true;
    i16 => write_i16, read_i16, 2, Int16, true;
    u16 => write_u16, read_u16, 2, UInt16, true;
    i32 => write_i32, read_i32, 4, Int32, true;
    u32 => write_u32, read_u32, 4, UInt32, true;
    i64 => write_i64, read_i64, 8, Int64, true;
    u64 => write_u64, read_u64, 8, UInt64, true;
    f32 => write_f32, read_f32, 4, Float32, true;
    f64 => write_f64, read_f64, 8, Float64, true;
    // Not plain: only 0 and 1 (a `char`: only valid code points) are values.
    bool => write_bool, read_bool, 1, Bool, false;
    // IDL `char`: one octet (ISO 8859-1), see `CdrWriter::write_char`.
    char => write_char, read_char, 1, Char8, false;
}

/// `u8` is IDL `octet`; sequences and arrays of it are copied in one piece.
impl CdrType for u8 {
    const MIN_SIZE: usize = 1;
    const PLAIN_LAYOUT: u64 = super::plain::layout_hash("u8", 1, 1);
    const KEY_EXTENT: KeyExtent = extent_primitive(1);
    const IS_PRIMITIVE: bool = true;
    const FLAT: Option<(usize, usize)> = Some((1, 1));
    const XCDR2_LC: u32 = 0;
    const FILTERABLE: bool = true;
    fn type_desc() -> TypeDesc {
        TypeDesc::Primitive(Primitive::Byte)
    }
    fn filter_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable> {
        leaf(path, Value::from(*self))
    }
    #[inline]
    fn write_cdr(&self, w: &mut CdrWriter<'_>) {
        w.write_u8(*self)
    }
    #[inline]
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_u8()
    }
    #[inline]
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_u8(r.read_u8()?);
        Ok(())
    }
    #[inline]
    fn write_cdr_slice(items: &[Self], w: &mut CdrWriter<'_>) {
        w.write_bytes(items)
    }
    #[inline]
    fn read_cdr_vec(r: &mut CdrReader<'_>, n: usize) -> Result<Vec<Self>, CdrError> {
        Ok(crate::copy::to_vec(r.read_bytes(n)?))
    }
    #[inline]
    fn read_cdr_vec_in_place(
        v: &mut Vec<Self>,
        r: &mut CdrReader<'_>,
        n: usize,
    ) -> Result<(), CdrError> {
        let bytes = r.read_bytes(n)?;
        v.clear();
        crate::copy::extend_bytes(v, bytes);
        Ok(())
    }
    #[inline]
    fn read_cdr_array<const N: usize>(r: &mut CdrReader<'_>) -> Result<[Self; N], CdrError> {
        let bytes = r.read_bytes(N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }
    #[inline]
    fn skip_cdr_many(r: &mut CdrReader<'_>, n: usize) -> Result<(), CdrError> {
        r.read_bytes(n).map(drop)
    }
}

/// IDL `string` (unbounded): not usable in a bounded key, so string keys hash with MD5.
impl CdrType for String {
    const MIN_SIZE: usize = 4;
    const KEY_EXTENT: KeyExtent = None;
    const XCDR2_LC: u32 = 5;
    const FILTERABLE: bool = true;
    fn type_desc() -> TypeDesc {
        TypeDesc::String { bound: 0 }
    }
    fn filter_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable> {
        leaf(path, Value::from(self.as_str()))
    }
    #[inline]
    fn write_cdr(&self, w: &mut CdrWriter<'_>) {
        w.write_str(self)
    }
    #[inline]
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        r.read_str().map(str::to_owned)
    }
    fn read_cdr_in_place(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        let s = r.read_str()?;
        self.clear();
        self.push_str(s);
        Ok(())
    }
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        w.write_str(r.read_str()?);
        Ok(())
    }
    fn skip_cdr(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        r.read_str().map(drop)
    }
}

/// Runs `f` inside an XCDR2 DHEADER if `needed` and the writer is XCDR2.
#[inline]
pub fn in_dheader_w<'a, R>(
    w: &mut CdrWriter<'a>,
    needed: bool,
    f: impl FnOnce(&mut CdrWriter<'a>) -> R,
) -> R {
    if needed && w.is_xcdr2() {
        let start = w.begin_dheader();
        let out = f(w);
        w.end_dheader(start);
        out
    } else {
        f(w)
    }
}

/// Runs `f` inside an XCDR2 DHEADER if `needed` and the reader is XCDR2.
#[inline]
pub fn in_dheader_r<'a, R>(
    r: &mut CdrReader<'a>,
    needed: bool,
    f: impl FnOnce(&mut CdrReader<'a>) -> Result<R, CdrError>,
) -> Result<R, CdrError> {
    if needed && r.is_xcdr2() {
        let end = r.read_dheader()?;
        let out = f(r)?;
        r.finish_dheader(end)?;
        Ok(out)
    } else {
        f(r)
    }
}

/// IDL `sequence<T>` (unbounded). In XCDR2 a DHEADER precedes it unless `T` is primitive.
impl<T: CdrType> CdrType for Vec<T> {
    const MIN_SIZE: usize = 4;
    const FILTERABLE: bool = T::FILTERABLE;
    fn filter_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable> {
        element(self, path)
    }
    const KEY_EXTENT: KeyExtent = None;
    const XCDR2_LC: u32 = if !T::IS_PRIMITIVE {
        5
    } else {
        match T::MIN_SIZE {
            1 => 5,
            4 => 6,
            8 => 7,
            _ => 4,
        }
    };
    fn type_desc() -> TypeDesc {
        TypeDesc::Sequence {
            element: Box::new(T::type_desc()),
            bound: 0,
        }
    }
    #[inline]
    fn write_cdr(&self, w: &mut CdrWriter<'_>) {
        in_dheader_w(w, !T::IS_PRIMITIVE, |w| {
            w.write_len(self.len());
            T::write_cdr_slice(self, w);
        })
    }
    #[inline]
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        in_dheader_r(r, !T::IS_PRIMITIVE, |r| {
            let n = r.read_len(T::MIN_SIZE)?;
            T::read_cdr_vec(r, n)
        })
    }
    #[inline]
    fn read_cdr_in_place(&mut self, r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        in_dheader_r(r, !T::IS_PRIMITIVE, |r| {
            let n = r.read_len(T::MIN_SIZE)?;
            T::read_cdr_vec_in_place(self, r, n)
        })
    }
    fn write_cdr_key(&self, w: &mut CdrWriter<'_>) {
        in_dheader_w(w, !T::IS_PRIMITIVE, |w| {
            w.write_len(self.len());
            for x in self {
                x.write_cdr_key(w);
            }
        })
    }
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        // The key form of an element may be empty, so only a count of one octet each is
        // checked; nothing is allocated here.
        in_dheader_r(r, !T::IS_PRIMITIVE, |r| {
            in_dheader_w(w, !T::IS_PRIMITIVE, |w| {
                let n = r.read_len(1)?;
                w.write_len(n);
                for _ in 0..n {
                    T::transcode_cdr_key(r, w)?;
                }
                Ok(())
            })
        })
    }
    fn extract_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        in_dheader_r(r, !T::IS_PRIMITIVE, |r| {
            in_dheader_w(w, !T::IS_PRIMITIVE, |w| {
                let n = r.read_len(T::MIN_SIZE)?;
                w.write_len(n);
                for _ in 0..n {
                    T::extract_cdr_key(r, w)?;
                }
                Ok(())
            })
        })
    }
    fn skip_cdr(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        if !T::IS_PRIMITIVE && r.is_xcdr2() {
            let end = r.read_dheader()?;
            return r.finish_dheader(end);
        }
        let n = r.read_len(T::MIN_SIZE)?;
        T::skip_cdr_many(r, n)
    }
}

/// IDL arrays `T name[N]`: the elements, no length. In XCDR2 a DHEADER precedes it unless
/// the elements are (arrays of) primitives.
impl<T: CdrType, const N: usize> CdrType for [T; N] {
    const MIN_SIZE: usize = T::MIN_SIZE.saturating_mul(N);
    const PLAIN_LAYOUT: u64 = if T::PLAIN_LAYOUT != 0 {
        super::plain::layout_mix(super::plain::layout_mix(T::PLAIN_LAYOUT, 0x5b5d), N as u64)
    } else {
        0
    };
    const FILTERABLE: bool = T::FILTERABLE;
    fn filter_value(&self, path: &[Step]) -> Result<Value<'_>, NotFilterable> {
        element(self, path)
    }
    const KEY_EXTENT: KeyExtent = if T::IS_FLAT_PRIMITIVE {
        extent_repeat(T::KEY_EXTENT, N)
    } else {
        extent_then(extent_primitive(4), extent_repeat(T::KEY_EXTENT, N))
    };
    const IS_FLAT_PRIMITIVE: bool = T::IS_FLAT_PRIMITIVE;
    const FLAT: Option<(usize, usize)> = match T::FLAT {
        Some((width, count)) if T::IS_FLAT_PRIMITIVE => Some((width, count.saturating_mul(N))),
        _ => None,
    };
    const XCDR2_LC: u32 = if T::IS_FLAT_PRIMITIVE { 4 } else { 5 };
    fn type_desc() -> TypeDesc {
        TypeDesc::Array {
            element: Box::new(T::type_desc()),
            dims: vec![u32::try_from(N).unwrap_or(u32::MAX)],
        }
    }
    #[inline]
    fn write_cdr(&self, w: &mut CdrWriter<'_>) {
        in_dheader_w(w, !T::IS_FLAT_PRIMITIVE, |w| T::write_cdr_slice(self, w))
    }
    #[inline]
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        in_dheader_r(r, !T::IS_FLAT_PRIMITIVE, |r| T::read_cdr_array::<N>(r))
    }
    fn write_cdr_key(&self, w: &mut CdrWriter<'_>) {
        in_dheader_w(w, !T::IS_FLAT_PRIMITIVE, |w| {
            for x in self {
                x.write_cdr_key(w);
            }
        })
    }
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        in_dheader_r(r, !T::IS_FLAT_PRIMITIVE, |r| {
            in_dheader_w(w, !T::IS_FLAT_PRIMITIVE, |w| {
                for _ in 0..N {
                    T::transcode_cdr_key(r, w)?;
                }
                Ok(())
            })
        })
    }
    fn extract_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        in_dheader_r(r, !T::IS_FLAT_PRIMITIVE, |r| {
            in_dheader_w(w, !T::IS_FLAT_PRIMITIVE, |w| {
                for _ in 0..N {
                    T::extract_cdr_key(r, w)?;
                }
                Ok(())
            })
        })
    }
    fn skip_cdr(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
        if !T::IS_FLAT_PRIMITIVE && r.is_xcdr2() {
            let end = r.read_dheader()?;
            return r.finish_dheader(end);
        }
        T::skip_cdr_many(r, N)
    }
}

/// Builds `[T; N]` from a fallible constructor without a heap allocation and without
/// requiring `Default` or `Copy`; on error the elements built so far are dropped.
pub(crate) fn read_array_with<T, const N: usize>(
    mut f: impl FnMut() -> Result<T, CdrError>,
) -> Result<[T; N], CdrError> {
    struct Partial<T, const N: usize> {
        items: [MaybeUninit<T>; N],
        init: usize,
    }
    impl<T, const N: usize> Drop for Partial<T, N> {
        fn drop(&mut self) {
            for item in &mut self.items[..self.init] {
                // SAFETY: exactly the first `init` elements have been written.
                unsafe { item.assume_init_drop() };
            }
        }
    }

    let mut partial = Partial::<T, N> {
        items: [const { MaybeUninit::uninit() }; N],
        init: 0,
    };
    while partial.init < N {
        let v = f()?;
        partial.items[partial.init].write(v);
        partial.init += 1;
    }
    // Disarm the guard: ownership of the elements moves to the returned array.
    partial.init = 0;
    // SAFETY: all N elements were written above, `[MaybeUninit<T>; N]` has the layout of
    // `[T; N]`, and the guard (init = 0) no longer drops them, so they are moved out once.
    let out =
        unsafe { core::ptr::read(&partial.items as *const [MaybeUninit<T>; N] as *const [T; N]) };
    Ok(out)
}
