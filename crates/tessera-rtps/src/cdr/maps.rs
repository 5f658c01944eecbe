//! IDL `map<K, V>` as `BTreeMap<K, V>` and `HashMap<K, V>`: a `uint32` count of entries, then
//! key and value of each (DDS-XTypes 1.3 §7.4.3.5.3); in XCDR2 inside a DHEADER when the key
//! or the value is not a primitive, as sequences. A `BTreeMap` writes its entries in key
//! order, so equal maps give equal bytes (and equal key hashes); a `HashMap` writes them in
//! its iteration order. A payload naming one key twice is refused
//! ([`CdrError::DuplicateMapKey`]) rather than silently keeping one of the values.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

use super::impls::{in_dheader_r, in_dheader_w};
use super::traits::KeyExtent;
use super::{CdrError, CdrReader, CdrType, CdrWriter};
use crate::xtypes::TypeDesc;

const fn dheader<K: CdrType, V: CdrType>() -> bool {
    !K::IS_PRIMITIVE || !V::IS_PRIMITIVE
}

fn map_desc<K: CdrType, V: CdrType>() -> TypeDesc {
    TypeDesc::Map {
        key: Box::new(K::type_desc()),
        value: Box::new(V::type_desc()),
        bound: 0,
    }
}

fn write_entries<'a, K: CdrType + 'a, V: CdrType + 'a>(
    n: usize,
    entries: impl Iterator<Item = (&'a K, &'a V)>,
    w: &mut CdrWriter<'_>,
    key_form: bool,
) {
    in_dheader_w(w, dheader::<K, V>(), |w| {
        w.write_len(n);
        for (k, v) in entries {
            if key_form {
                k.write_cdr_key(w);
                v.write_cdr_key(w);
            } else {
                k.write_cdr(w);
                v.write_cdr(w);
            }
        }
    })
}

/// Reads the entries, handing each to `insert` (false: the key was there already).
fn read_entries<K: CdrType, V: CdrType>(
    r: &mut CdrReader<'_>,
    mut insert: impl FnMut(K, V) -> bool,
) -> Result<(), CdrError> {
    in_dheader_r(r, dheader::<K, V>(), |r| {
        let n = r.read_len(K::MIN_SIZE.saturating_add(V::MIN_SIZE))?;
        for _ in 0..n {
            let k = K::read_cdr(r)?;
            let v = V::read_cdr(r)?;
            if !insert(k, v) {
                return Err(CdrError::DuplicateMapKey);
            }
        }
        Ok(())
    })
}

fn transcode_entries<K: CdrType, V: CdrType>(
    r: &mut CdrReader<'_>,
    w: &mut CdrWriter<'_>,
    extract: bool,
) -> Result<(), CdrError> {
    in_dheader_r(r, dheader::<K, V>(), |r| {
        in_dheader_w(w, dheader::<K, V>(), |w| {
            let n = r.read_len(1)?;
            w.write_len(n);
            for _ in 0..n {
                if extract {
                    K::extract_cdr_key(r, w)?;
                    V::extract_cdr_key(r, w)?;
                } else {
                    K::transcode_cdr_key(r, w)?;
                    V::transcode_cdr_key(r, w)?;
                }
            }
            Ok(())
        })
    })
}

impl<K: CdrType + Ord, V: CdrType> CdrType for BTreeMap<K, V> {
    const MIN_SIZE: usize = 4;
    const KEY_EXTENT: KeyExtent = None;
    const XCDR2_LC: u32 = if dheader::<K, V>() { 5 } else { 4 };
    fn type_desc() -> TypeDesc {
        map_desc::<K, V>()
    }
    fn write_cdr(&self, w: &mut CdrWriter<'_>) {
        write_entries(self.len(), self.iter(), w, false)
    }
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let mut m = BTreeMap::new();
        read_entries(r, |k, v| m.insert(k, v).is_none())?;
        Ok(m)
    }
    fn write_cdr_key(&self, w: &mut CdrWriter<'_>) {
        write_entries(self.len(), self.iter(), w, true)
    }
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        transcode_entries::<K, V>(r, w, false)
    }
    fn extract_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        transcode_entries::<K, V>(r, w, true)
    }
}

impl<K: CdrType + Eq + Hash, V: CdrType, S: BuildHasher + Default> CdrType for HashMap<K, V, S> {
    const MIN_SIZE: usize = 4;
    const KEY_EXTENT: KeyExtent = None;
    const XCDR2_LC: u32 = if dheader::<K, V>() { 5 } else { 4 };
    fn type_desc() -> TypeDesc {
        map_desc::<K, V>()
    }
    fn write_cdr(&self, w: &mut CdrWriter<'_>) {
        write_entries(self.len(), self.iter(), w, false)
    }
    fn read_cdr(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let mut m = HashMap::default();
        read_entries(r, |k, v| m.insert(k, v).is_none())?;
        Ok(m)
    }
    fn write_cdr_key(&self, w: &mut CdrWriter<'_>) {
        write_entries(self.len(), self.iter(), w, true)
    }
    fn transcode_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        transcode_entries::<K, V>(r, w, false)
    }
    fn extract_cdr_key(r: &mut CdrReader<'_>, w: &mut CdrWriter<'_>) -> Result<(), CdrError> {
        transcode_entries::<K, V>(r, w, true)
    }
}
