//! Tensors in and out of IREE functions.

use std::fmt;

use crate::element::ElementType;
use crate::error::Error;

/// A dense, row-major tensor held on the host: shape, element type and
/// the elements' bytes in native byte order.
#[derive(Clone, PartialEq, Eq)]
pub struct Tensor {
    shape: Vec<usize>,
    element_type: ElementType,
    data: Vec<u8>,
}

impl Tensor {
    /// A tensor over `data`.
    ///
    /// # Errors
    /// [`Error::TensorSize`] when `data` does not hold exactly the
    /// shape's element count of `element_type`.
    pub fn new(shape: Vec<usize>, element_type: ElementType, data: Vec<u8>) -> Result<Self, Error> {
        check_size(&shape, element_type, data.len())?;
        Ok(Self { shape, element_type, data })
    }

    /// A tensor IREE described: its byte length is IREE's, which may
    /// differ from the plain product for packed or padded encodings.
    pub(crate) fn from_parts_unchecked(shape: Vec<usize>, element_type: ElementType, data: Vec<u8>) -> Self {
        Self { shape, element_type, data }
    }

    /// A one-dimensional `f32` tensor.
    #[must_use]
    pub fn from_f32(values: &[f32]) -> Self {
        let data = values.iter().flat_map(|value| value.to_ne_bytes()).collect();
        Self { shape: vec![values.len()], element_type: ElementType::F32, data }
    }

    /// The shape, outermost dimension first.
    #[must_use]
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    #[must_use]
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The elements' bytes, row-major, native byte order.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The number of elements.
    #[must_use]
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the tensor has no elements.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A tensor from an `.npy` array (little-endian dtypes of the element
    /// types [`ElementType`] names).
    ///
    /// # Errors
    /// [`Error::NpyDtype`] for another dtype, [`Error::TensorSize`]
    /// when the data does not match the shape.
    pub fn from_npy(array: xplug_npy::NpyArray) -> Result<Self, Error> {
        let element_type = NPY_DTYPES
            .iter()
            .find(|(descr, _)| *descr == array.descr)
            .map(|(_, element_type)| *element_type)
            .ok_or_else(|| Error::NpyDtype { descr: array.descr.clone() })?;
        Self::new(array.shape, element_type, array.data)
    }

    /// The tensor as an `.npy` array, when its element type has a NumPy
    /// dtype (`None` otherwise).
    #[must_use]
    pub fn to_npy(&self) -> Option<xplug_npy::NpyArray> {
        let descr = NPY_DTYPES.iter().find(|(_, element_type)| *element_type == self.element_type)?.0;
        Some(xplug_npy::NpyArray {
            descr: descr.to_owned(),
            shape: self.shape.clone(),
            data: self.data.clone(),
        })
    }

    /// The elements as `f32`, when that is the element type.
    #[must_use]
    pub fn to_f32(&self) -> Option<Vec<f32>> {
        (self.element_type == ElementType::F32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|bytes| f32::from_ne_bytes(bytes.try_into().expect("chunks of four")))
                .collect()
        })
    }
}

impl fmt::Debug for Tensor {
    /// The element type, the shape and the first values:
    /// `Tensor(f32 [2, 3]: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])`, with `...`
    /// after [`DEBUG_VALUES`] of them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.view(), f)
    }
}

/// How many values the `Debug` form of a [`Tensor`] or [`TensorView`]
/// shows before `...`.
pub const DEBUG_VALUES: usize = 8;

/// A Rust type whose values are the elements of IREE tensors of one element
/// type: the integers (`i8` to `i64`, `u8` to `u64`), `f32`, `f64`, `bool`
/// (IREE's `i1`, one byte each) and the `half` crate's `f16` and `bf16`.
///
/// Sealed: every implementation is a plain number whose bytes are its
/// value, so slices of it are handed to IREE as bytes without a copy, and
/// bytes IREE returns are checked (a `bool` must be 0 or 1) before they
/// are read as it.
pub trait Element:
    bytemuck::NoUninit + bytemuck::CheckedBitPattern + fmt::Debug + private::Sealed + 'static
{
    /// The element type a tensor made of this type has. Signed Rust
    /// integers make IREE's signed types (`si32`), unsigned ones its
    /// unsigned types (`ui32`): IREE accepts either for a program's
    /// signless `i32` argument, as it does for `.npy` inputs.
    const ELEMENT_TYPE: ElementType;

    /// The Rust type's name, for errors.
    const RUST_NAME: &'static str;

    /// Whether elements of `element_type` read as this type: its own
    /// element type and, for integers, the signless type of its width.
    #[must_use]
    fn reads(element_type: ElementType) -> bool {
        element_type == Self::ELEMENT_TYPE || signless(Self::ELEMENT_TYPE) == Some(element_type)
    }
}

/// The signless integer type of a signed or unsigned one's width.
fn signless(element_type: ElementType) -> Option<ElementType> {
    let kind = element_type.0 >> 24;
    (kind == 0x11 || kind == 0x12).then_some(ElementType(0x1000_0000 | element_type.bit_count()))
}

mod private {
    pub trait Sealed {}
}

macro_rules! elements {
    ($($ty:ty => $element_type:ident),* $(,)?) => {
        $(
            impl private::Sealed for $ty {}
            impl Element for $ty {
                const ELEMENT_TYPE: ElementType = ElementType::$element_type;
                const RUST_NAME: &'static str = stringify!($ty);
            }
        )*
    };
}

elements!(
    i8 => SI8, i16 => SI16, i32 => SI32, i64 => SI64,
    u8 => UI8, u16 => UI16, u32 => UI32, u64 => UI64,
    f32 => F32, f64 => F64, bool => BOOL,
    half::f16 => F16, half::bf16 => BF16,
);

impl Tensor {
    /// A tensor of `shape` holding a copy of `values`, of `T`'s element
    /// type ([`Element`]). To hand IREE a slice without copying it here,
    /// make a [`TensorView`] instead.
    ///
    /// ```
    /// use xplug_iree::{ElementType, Tensor};
    ///
    /// let tensor = Tensor::from_slice(&[2, 2], &[1i64, 2, 3, 4])?;
    /// assert_eq!(tensor.element_type(), ElementType::SI64);
    /// assert_eq!(tensor.to_vec::<i64>()?, [1, 2, 3, 4]);
    /// assert_eq!(format!("{tensor:?}"), "Tensor(si64 [2, 2]: [1, 2, 3, 4])");
    /// # Ok::<(), xplug_iree::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TensorSize`] when `values` does not hold exactly the
    /// shape's element count.
    pub fn from_slice<T: Element>(shape: &[usize], values: &[T]) -> Result<Self, Error> {
        TensorView::new(shape, values).map(|view| view.to_tensor())
    }

    /// The elements as `T`, copied out.
    ///
    /// # Errors
    /// [`Error::TensorElementType`] when the tensor's element type
    /// does not read as `T` ([`Element::reads`]);
    /// [`Error::TensorElementValue`] when an element's bytes are not
    /// a value of `T` (a `bool` byte other than 0 or 1).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, Error> {
        self.view().to_vec()
    }

    /// A view of this tensor, for calls that take views.
    #[must_use]
    pub fn view(&self) -> TensorView<'_> {
        TensorView { shape: &self.shape, element_type: self.element_type, data: &self.data }
    }
}

/// A dense, row-major tensor whose elements are borrowed: shape, element
/// type and a byte slice in native byte order. [`crate::Session::prepare`]
/// takes views (and anything that converts to one, such as `&Tensor`), so
/// data already in a Rust slice goes to the device with no copy on the
/// Rust side.
///
/// ```
/// use xplug_iree::{ElementType, TensorView};
///
/// let samples = vec![0.5f32; 1024];
/// let view = TensorView::new(&[32, 32], &samples)?; // borrows `samples`
/// assert_eq!((view.shape(), view.element_type()), (&[32, 32][..], ElementType::F32));
/// assert_eq!(view.data().as_ptr(), samples.as_ptr().cast());
/// # Ok::<(), xplug_iree::Error>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TensorView<'a> {
    shape: &'a [usize],
    element_type: ElementType,
    data: &'a [u8],
}

impl<'a> TensorView<'a> {
    /// A view of `values` as a tensor of `shape`, of `T`'s element type.
    ///
    /// # Errors
    /// [`Error::TensorSize`] when `values` does not hold exactly the
    /// shape's element count.
    pub fn new<T: Element>(shape: &'a [usize], values: &'a [T]) -> Result<Self, Error> {
        Self::from_bytes(shape, T::ELEMENT_TYPE, bytemuck::cast_slice(values))
    }

    /// A view of raw bytes as a tensor of `shape` and `element_type`.
    ///
    /// # Errors
    /// [`Error::TensorSize`] when `data` does not hold exactly the
    /// shape's element count of `element_type`.
    pub fn from_bytes(shape: &'a [usize], element_type: ElementType, data: &'a [u8]) -> Result<Self, Error> {
        check_size(shape, element_type, data.len())?;
        Ok(Self { shape, element_type, data })
    }

    /// The shape, outermost dimension first.
    #[must_use]
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// The element type.
    #[must_use]
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The elements' bytes, row-major, native byte order.
    #[must_use]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// A view IREE described: its byte length is IREE's.
    pub(crate) fn from_parts_unchecked(
        shape: &'a [usize],
        element_type: ElementType,
        data: &'a [u8],
    ) -> Self {
        Self { shape, element_type, data }
    }

    /// An owned copy.
    #[must_use]
    pub fn to_tensor(&self) -> Tensor {
        Tensor { shape: self.shape.to_vec(), element_type: self.element_type, data: self.data.to_vec() }
    }

    /// The elements as `T`, copied out.
    ///
    /// # Errors
    /// As [`Tensor::to_vec`].
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, Error> {
        read_elements(self.element_type, self.data)
    }
}

impl<'a> From<&'a Tensor> for TensorView<'a> {
    fn from(tensor: &'a Tensor) -> Self {
        tensor.view()
    }
}

impl fmt::Debug for TensorView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = if f.alternate() { "TensorView" } else { "Tensor" };
        write!(f, "{name}({} {:?}: ", self.element_type, self.shape)?;
        fmt_values(self.element_type, self.data, f)?;
        f.write_str(")")
    }
}

/// Checks that `length` bytes hold exactly `shape`'s elements.
fn check_size(shape: &[usize], element_type: ElementType, length: usize) -> Result<(), Error> {
    let expected = shape.iter().try_fold(1usize, |count, &dim| count.checked_mul(dim));
    let expected = expected.and_then(|count| count.checked_mul(element_type.byte_size()));
    if expected == Some(length) {
        return Ok(());
    }
    Err(Error::TensorSize {
        shape: shape.to_vec(),
        element_type,
        expected: expected.unwrap_or(usize::MAX),
        found: length,
    })
}

/// `data`, elements of `element_type`, read as `T`.
pub(crate) fn read_elements<T: Element>(element_type: ElementType, data: &[u8]) -> Result<Vec<T>, Error> {
    if !T::reads(element_type) {
        return Err(Error::TensorElementType { element_type, rust_type: T::RUST_NAME });
    }
    data.chunks_exact(size_of::<T>())
        .enumerate()
        .map(|(index, bytes)| {
            bytemuck::checked::try_pod_read_unaligned(bytes).map_err(|_| Error::TensorElementValue {
                rust_type: T::RUST_NAME,
                index,
                bytes: bytes.to_vec(),
            })
        })
        .collect()
}

/// `data`, elements of `element_type`, as a slice of `T` in place.
pub(crate) fn cast_elements<T: Element>(element_type: ElementType, data: &[u8]) -> Result<&[T], Error> {
    if !T::reads(element_type) {
        return Err(Error::TensorElementType { element_type, rust_type: T::RUST_NAME });
    }
    bytemuck::checked::try_cast_slice(data).map_err(|_| {
        // Find the element at fault for the message (alignment faults
        // name the first).
        let index = data
            .chunks_exact(size_of::<T>())
            .position(|bytes| bytemuck::checked::try_pod_read_unaligned::<T>(bytes).is_err())
            .unwrap_or(0);
        let bytes = data.chunks_exact(size_of::<T>()).nth(index).unwrap_or_default().to_vec();
        Error::TensorElementValue { rust_type: T::RUST_NAME, index, bytes }
    })
}

/// Writes the first [`DEBUG_VALUES`] elements of `data` as a list.
fn fmt_values(element_type: ElementType, data: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    fn list<T: Element>(data: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = data.len() / size_of::<T>();
        let shown = &data[..count.min(DEBUG_VALUES) * size_of::<T>()];
        f.write_str("[")?;
        for (index, bytes) in shown.chunks_exact(size_of::<T>()).enumerate() {
            if index > 0 {
                f.write_str(", ")?;
            }
            match bytemuck::checked::try_pod_read_unaligned::<T>(bytes) {
                Ok(value) => write!(f, "{value:?}")?,
                Err(_) => write!(f, "<invalid {bytes:02x?}>")?,
            }
        }
        if count > DEBUG_VALUES {
            write!(f, ", ... {} more", count - DEBUG_VALUES)?;
        }
        f.write_str("]")
    }
    match element_type {
        ElementType::I8 | ElementType::SI8 => list::<i8>(data, f),
        ElementType::I16 | ElementType::SI16 => list::<i16>(data, f),
        ElementType::I32 | ElementType::SI32 => list::<i32>(data, f),
        ElementType::I64 | ElementType::SI64 => list::<i64>(data, f),
        ElementType::UI8 => list::<u8>(data, f),
        ElementType::UI16 => list::<u16>(data, f),
        ElementType::UI32 => list::<u32>(data, f),
        ElementType::UI64 => list::<u64>(data, f),
        ElementType::F16 => list::<half::f16>(data, f),
        ElementType::BF16 => list::<half::bf16>(data, f),
        ElementType::F32 => list::<f32>(data, f),
        ElementType::F64 => list::<f64>(data, f),
        ElementType::BOOL => list::<bool>(data, f),
        _ => write!(f, "{} bytes", data.len()),
    }
}

/// NumPy dtypes and the element types they hold, on little-endian hosts
/// (the only ones IREE's CPU runtime is built for here). Where two element
/// types share a dtype, the first listed is what a file reads as: signed
/// for NumPy's `i` kinds, as IREE's own `.npy` reader reads them (a
/// function that returns its input prints `si32`, as iree-run-module's).
#[cfg(target_endian = "little")]
const NPY_DTYPES: &[(&str, ElementType)] = &[
    ("<f4", ElementType::F32),
    ("<f8", ElementType::F64),
    ("<f2", ElementType::F16),
    ("<i4", ElementType::SI32),
    ("<i4", ElementType::I32),
    ("<i8", ElementType::SI64),
    ("<i8", ElementType::I64),
    ("<i2", ElementType::SI16),
    ("<i2", ElementType::I16),
    ("|i1", ElementType::SI8),
    ("|i1", ElementType::I8),
    ("|u1", ElementType::UI8),
    ("<u2", ElementType::UI16),
    ("<u4", ElementType::UI32),
    ("<u8", ElementType::UI64),
    ("|b1", ElementType::BOOL),
];

/// One result of a function call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// A tensor (`hal.buffer_view`), copied to the host.
    Tensor(Tensor),
    /// An integer scalar, widened, with its bit width.
    Integer {
        /// The value.
        value: i64,
        /// 8, 16, 32 or 64.
        bits: u32,
    },
    /// A float scalar, widened, with its bit width.
    Float {
        /// The value.
        value: f64,
        /// 32 or 64.
        bits: u32,
    },
    /// No value (a null reference).
    Empty,
    /// A value of a kind this crate does not copy out (lists, buffers).
    Other,
}

impl Value {
    /// The value as `iree-run-module` writes it to a file
    /// (`--output=@FILE`): a tensor as it is, an integer or float scalar as
    /// a 0-d tensor of its type (`i32` 42 → shape `[]`, four bytes), an
    /// empty value as an `i8` tensor of shape `[0]`; `None` for the kinds
    /// this crate does not copy out.
    ///
    /// ```
    /// use xplug_iree::{ElementType, Value};
    ///
    /// let scalar = Value::Integer { value: 42, bits: 32 }.to_tensor().unwrap();
    /// assert_eq!((scalar.shape(), scalar.element_type()), (&[][..], ElementType::I32));
    /// assert_eq!(scalar.data(), 42i32.to_ne_bytes());
    /// ```
    #[must_use]
    pub fn to_tensor(&self) -> Option<Tensor> {
        let scalar =
            |element_type: ElementType, data: Vec<u8>| Tensor { shape: Vec::new(), element_type, data };
        Some(match *self {
            Self::Tensor(ref tensor) => tensor.clone(),
            Self::Integer { value, bits: 8 } => scalar(ElementType::I8, (value as i8).to_ne_bytes().to_vec()),
            Self::Integer { value, bits: 16 } => {
                scalar(ElementType::I16, (value as i16).to_ne_bytes().to_vec())
            }
            Self::Integer { value, bits: 32 } => {
                scalar(ElementType::I32, (value as i32).to_ne_bytes().to_vec())
            }
            Self::Integer { value, bits: 64 } => scalar(ElementType::I64, value.to_ne_bytes().to_vec()),
            Self::Float { value, bits: 32 } => {
                scalar(ElementType::F32, (value as f32).to_ne_bytes().to_vec())
            }
            Self::Float { value, bits: 64 } => scalar(ElementType::F64, value.to_ne_bytes().to_vec()),
            Self::Empty => Tensor { shape: vec![0], element_type: ElementType::I8, data: Vec::new() },
            Self::Integer { .. } | Self::Float { .. } | Self::Other => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_type_has_its_iree_name_size_and_npy_dtype() {
        let cases: [(ElementType, &str, usize, Option<&str>); 17] = [
            (ElementType::BOOL, "i1", 1, Some("|b1")),
            (ElementType::I8, "i8", 1, Some("|i1")),
            (ElementType::SI8, "si8", 1, Some("|i1")),
            (ElementType::UI8, "ui8", 1, Some("|u1")),
            (ElementType::I16, "i16", 2, Some("<i2")),
            (ElementType::SI16, "si16", 2, Some("<i2")),
            (ElementType::UI16, "ui16", 2, Some("<u2")),
            (ElementType::I32, "i32", 4, Some("<i4")),
            (ElementType::SI32, "si32", 4, Some("<i4")),
            (ElementType::UI32, "ui32", 4, Some("<u4")),
            (ElementType::I64, "i64", 8, Some("<i8")),
            (ElementType::SI64, "si64", 8, Some("<i8")),
            (ElementType::UI64, "ui64", 8, Some("<u8")),
            (ElementType::F16, "f16", 2, Some("<f2")),
            (ElementType::BF16, "bf16", 2, None),
            (ElementType::F32, "f32", 4, Some("<f4")),
            (ElementType::F64, "f64", 8, Some("<f8")),
        ];
        for (element_type, name, size, descr) in cases {
            assert_eq!((element_type.name(), element_type.byte_size()), (Some(name), size));
            assert_eq!(element_type.to_string(), name);
            let tensor = Tensor::new(vec![3], element_type, vec![7; 3 * size]).unwrap();
            let npy = tensor.to_npy();
            assert_eq!(npy.as_ref().map(|array| array.descr.as_str()), descr, "{name}");
            // A file reads back as the first type of its dtype, same bytes.
            if let Some(array) = npy {
                let back = Tensor::from_npy(xplug_npy::decode(&xplug_npy::encode(&array)).unwrap()).unwrap();
                assert_eq!((back.shape(), back.data()), (tensor.shape(), tensor.data()), "{name}");
                assert_eq!(back.element_type().byte_size(), size, "{name}");
            }
        }
        assert_eq!(ElementType(0x2200_0020).to_string(), "ElementType(0x22000020)");
    }

    #[test]
    fn scalars_become_zero_dimensional_tensors_of_their_type() {
        let cases = [
            (Value::Integer { value: -2, bits: 8 }, ElementType::I8, vec![0xfe]),
            (Value::Integer { value: 300, bits: 16 }, ElementType::I16, 300i16.to_ne_bytes().to_vec()),
            (
                Value::Integer { value: 1 << 40, bits: 64 },
                ElementType::I64,
                (1i64 << 40).to_ne_bytes().to_vec(),
            ),
            (Value::Float { value: 4.5, bits: 32 }, ElementType::F32, 4.5f32.to_ne_bytes().to_vec()),
            (Value::Float { value: -0.25, bits: 64 }, ElementType::F64, (-0.25f64).to_ne_bytes().to_vec()),
        ];
        for (value, element_type, data) in cases {
            let tensor = value.to_tensor().unwrap();
            assert_eq!(
                (tensor.shape(), tensor.element_type(), tensor.data()),
                (&[][..], element_type, &data[..])
            );
            let npy = tensor.to_npy().unwrap();
            assert!(npy.shape.is_empty(), "{npy:?}");
        }
        let empty = Value::Empty.to_tensor().unwrap();
        assert_eq!((empty.shape(), empty.data().len()), (&[0][..], 0));
        assert_eq!(empty.to_npy().unwrap().descr, "|i1");
        assert!(Value::Other.to_tensor().is_none());
        assert!(Value::Integer { value: 1, bits: 3 }.to_tensor().is_none());
    }
}
