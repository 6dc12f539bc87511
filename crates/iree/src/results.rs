//! Call results: what a call returned, still on the device, read as
//! copies, in place, or as `iree-run-module` prints them.

use crate::element::ElementType;
use crate::error::Error;
use crate::mapped::MappedTensor;
use crate::module::Function;
use crate::runtime::Device;
use crate::sys;
use crate::tensor::{Tensor, Value};

/// The results of one [`Call::invoke`](crate::Call::invoke), still on the
/// device.
pub struct CallResults {
    pub(crate) list: sys::List,
    pub(crate) device: Device,
    pub(crate) function: Function,
    pub(crate) name: String,
}

impl CallResults {
    /// How many results the function returned.
    #[must_use]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether it returned nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The function that returned them.
    #[must_use]
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Result `index` copied to the host.
    ///
    /// # Errors
    /// [`Error::Result`] when IREE cannot read it.
    pub fn value(&self, index: usize) -> Result<Value, Error> {
        let result_error = self.result_error(index);
        Ok(match self.list.get(index).map_err(&result_error)? {
            sys::ListValue::View(view) => {
                Value::Tensor(read_tensor(&self.device, &view).map_err(result_error)?)
            }
            sys::ListValue::Integer { value, bits } => Value::Integer { value, bits },
            sys::ListValue::Float { value, bits } => Value::Float { value, bits },
            sys::ListValue::Empty => Value::Empty,
            sys::ListValue::Other => Value::Other,
        })
    }

    /// How a failed read of result `index` is reported.
    fn result_error(&self, index: usize) -> impl Fn(sys::Status) -> Error + '_ {
        move |status| Error::Result { function: self.name.clone(), index, source: status.into() }
    }

    /// Result `index`, a tensor, read in place: the device's memory mapped
    /// for reading, with no copy, for as long as the [`MappedTensor`]
    /// lives. IREE's local devices (`local-sync`, `local-task`) keep
    /// results in host memory, so this works there whenever the program
    /// allocated the result mappable; [`CallResults::value`] copies
    /// instead.
    ///
    /// # Errors
    /// [`Error::NotATensor`] when the result is a scalar or another kind;
    /// [`Error::Result`] when IREE cannot map it (FAILED_PRECONDITION: not
    /// host-visible or not mappable).
    pub fn tensor(&self, index: usize) -> Result<MappedTensor, Error> {
        let result_error = self.result_error(index);
        let sys::ListValue::View(view) = self.list.get(index).map_err(&result_error)? else {
            return Err(Error::NotATensor { function: self.name.clone(), index });
        };
        let (shape, element_type) = view.shape_and_element_type().map_err(&result_error)?;
        let mapping = sys::ReadMapping::new(view).map_err(result_error)?;
        Ok(MappedTensor { shape, element_type: ElementType(element_type), mapping })
    }

    /// Every result copied to the host.
    ///
    /// # Errors
    /// As [`CallResults::value`].
    pub fn values(&self) -> Result<Vec<Value>, Error> {
        (0..self.len()).map(|index| self.value(index)).collect()
    }

    /// Result `index` in the text `iree-run-module` prints after
    /// `result[N]: `: the type (`hal.buffer_view`) on one line, then
    /// IREE's own formatting of the contents, at most `max_elements`
    /// elements (`iree-run-module`'s default is 1024).
    ///
    /// # Errors
    /// [`Error::Result`] when IREE cannot format it.
    pub fn format(&self, index: usize, max_elements: usize) -> Result<String, Error> {
        self.list.format(index, max_elements).map_err(self.result_error(index))
    }
}

/// A copy of the tensor `view` holds.
fn read_tensor(device: &Device, view: &sys::BufferView) -> Result<Tensor, sys::Status> {
    let (shape, element_type) = view.shape_and_element_type()?;
    let data = view.read(&device.inner.handles.device)?;
    Ok(Tensor::from_parts_unchecked(shape, ElementType(element_type), data))
}
