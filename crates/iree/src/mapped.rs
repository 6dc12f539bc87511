//! Mapped tensors: a result read in place, in the device's memory.

use crate::element::ElementType;
use crate::error::Error;
use crate::sys;
use crate::tensor::{self, Element, TensorView};

/// A result tensor read in place ([`CallResults::tensor`](crate::CallResults::tensor)):
/// its shape, element type and the device memory holding it, mapped for
/// reading until this is dropped.
///
/// ```no_run
/// # fn run(session: &xplug_iree::Session) -> Result<(), xplug_iree::Error> {
/// use xplug_iree::TensorView;
///
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
/// let results = session.prepare("mul", [TensorView::new(&[4], &a)?, TensorView::new(&[4], &b)?])?.invoke()?;
/// let product = results.tensor(0)?; // no copy
/// assert_eq!(product.as_slice::<f32>()?, [5.0, 12.0, 21.0, 32.0]);
/// # Ok(()) }
/// ```
pub struct MappedTensor {
    pub(crate) shape: Vec<usize>,
    pub(crate) element_type: ElementType,
    pub(crate) mapping: sys::ReadMapping,
}

impl MappedTensor {
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

    /// The elements' bytes as IREE holds them.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        self.mapping.bytes()
    }

    /// The elements as a slice of `T`, in place.
    ///
    /// # Errors
    /// [`Error::TensorElementType`] when the element type does not read as
    /// `T`; [`Error::TensorElementValue`] when an element is not a value of
    /// `T` (a `bool` byte other than 0 or 1), or the memory is not aligned
    /// for `T` (IREE aligns buffers far beyond any element's alignment).
    pub fn as_slice<T: Element>(&self) -> Result<&[T], Error> {
        tensor::cast_elements(self.element_type, self.data())
    }

    /// A view of the mapped tensor, for another call's input.
    #[must_use]
    pub fn view(&self) -> TensorView<'_> {
        TensorView::from_parts_unchecked(&self.shape, self.element_type, self.data())
    }
}

impl std::fmt::Debug for MappedTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mapped{:?}", self.view())
    }
}
