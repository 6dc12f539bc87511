//! Calls: the one way to call a function of a session's module.

use crate::error::Error;
use crate::input::{self, Argument};
use crate::module::Function;
use crate::results::CallResults;
use crate::session::Session;
use crate::sys;

impl Session {
    /// Makes a call of `function` (a name the session's module exports:
    /// `"mul"`, or the bytes of [`Function::name`]) with `arguments`, as
    /// `iree-run-module` makes it from `--function` and its `--input`
    /// flags: the function is found in the module alone, and each argument
    /// is matched with the next type of its calling convention (`i`, `I`,
    /// `f`, `F` for `i32`, `i64`, `f32`, `f64`; `r` for a reference such
    /// as a tensor). Nothing runs until [`Call::invoke`].
    ///
    /// The arguments are anything that converts to an [`Argument`]:
    /// `&Tensor`s (`&[Tensor]`), [`TensorView`](crate::TensorView)s of the
    /// caller's own slices, which go to the device with no copy on the
    /// Rust side, or `iree-run-module --input` text ([`Argument::Text`]).
    /// Too few arguments are left for IREE's invocation to refuse, as in
    /// IREE's tool.
    ///
    /// ```no_run
    /// # fn run(session: &xplug_iree::Session) -> Result<(), xplug_iree::Error> {
    /// use xplug_iree::TensorView;
    ///
    /// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [5.0f32, 6.0, 7.0, 8.0]);
    /// let call = session.prepare("mul", [TensorView::new(&[4], &a)?, TensorView::new(&[4], &b)?])?;
    /// let results = call.invoke()?;
    /// assert_eq!(results.tensor(0)?.as_slice::<f32>()?, [5.0, 12.0, 21.0, 32.0]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::NoSuchFunction`] (with a suggestion) when the module does
    /// not export `function`; [`Error::Input`] for too many arguments, a
    /// tensor where a scalar is expected (or the reverse), an empty one, a
    /// file too short for its type; [`Error::Argument`] when IREE refuses
    /// one; for a file the errors of [`crate::files::read_bounded`],
    /// [`Error::Npy`] and [`Error::NpyDtype`].
    pub fn prepare<'a, I>(&self, function: impl AsRef<[u8]>, arguments: I) -> Result<Call<'_>, Error>
    where
        I: IntoIterator,
        I::Item: Into<Argument<'a>>,
    {
        let function = self.module.function(function.as_ref())?;
        let arguments: Vec<Argument<'a>> = arguments.into_iter().map(Into::into).collect();
        let name = function.name_lossy();
        let inputs = input::argument_list(
            &self.device.inner.handles.device,
            &name,
            function.argument_types(),
            &arguments,
        )?;
        Ok(Call { session: self, function, name, inputs })
    }
}

/// A call made ready by [`Session::prepare`]: the function and its
/// argument list, on the session's device.
pub struct Call<'s> {
    session: &'s Session,
    function: Function,
    name: String,
    inputs: sys::List,
}

impl Call<'_> {
    /// The function this call runs.
    #[must_use]
    pub fn function(&self) -> &Function {
        &self.function
    }

    /// Runs the function on the prepared arguments; the results stay on
    /// the device until read.
    ///
    /// # Errors
    /// [`Error::Call`] when IREE's invocation fails (too few arguments
    /// included: IREE's invocation checks them).
    pub fn invoke(self) -> Result<CallResults, Error> {
        let call_error =
            |status: sys::Status| Error::Call { function: self.name.clone(), source: status.into() };
        let outputs = sys::List::new(4).map_err(call_error)?;
        sys::invoke(&self.session.context, &self.function.vm, &self.inputs, &outputs).map_err(call_error)?;
        Ok(CallResults {
            list: outputs,
            device: self.session.device.clone(),
            function: self.function,
            name: self.name,
        })
    }
}
