//! The `--input` grammar: the one place where a call's arguments (and the
//! expected outputs a result is compared with) are read, as
//! `iree-run-module` reads its `--input` flags, against the types of the
//! function's calling convention.

use std::path::Path;

use crate::error::{Error, IreeStatus};
use crate::files;
use crate::sys;
use crate::tensor::{Tensor, TensorView};

/// One argument of a call ([`Session::prepare`](crate::Session::prepare)),
/// or one expected output ([`CallResults::compare`](crate::CallResults::compare)).
/// `&Tensor`, [`TensorView`] (or a reference to one) and `&str` (text)
/// convert into it.
#[derive(Debug, Clone, Copy)]
pub enum Argument<'a> {
    /// A host tensor (a [`TensorView`]; `&Tensor` converts with `.into()`),
    /// copied to the device straight from its slice.
    Tensor(TensorView<'a>),
    /// One `iree-run-module --input` value, read as IREE's tool reads it
    /// for the parameter it meets.
    ///
    /// A number for a scalar parameter (`21`, `0x10`, `-1.5`, parsed by
    /// IREE's own `iree_string_view_atoi`/`atof`), a tensor
    /// (`4xf32=1,2,3,4`, `2x2xi32=[1 2][3 4]`; `f32=7` for a 0-d tensor),
    /// `(null)`/`(ignored)`, and files: `@FILE.npy` (the first array),
    /// `+FILE.npy` (the next array after the last read of the same path),
    /// `*FILE.npy` (every array left, one argument each), `4xf32=@FILE` and
    /// `4xf32=+FILE` (raw bytes, from the start or from where the last read
    /// stopped), and `&TYPE=...` (the buffer alone, as storage for an
    /// output). Files are read through [`crate::files::read_bounded`], at
    /// most [`crate::files::INPUT_LIMIT`] bytes each. Leading and trailing
    /// whitespace is trimmed.
    Text(&'a str),
}

impl<'a> From<TensorView<'a>> for Argument<'a> {
    fn from(view: TensorView<'a>) -> Self {
        Self::Tensor(view)
    }
}

impl<'a> From<&TensorView<'a>> for Argument<'a> {
    fn from(view: &TensorView<'a>) -> Self {
        Self::Tensor(*view)
    }
}

impl<'a> From<&'a Tensor> for Argument<'a> {
    fn from(tensor: &'a Tensor) -> Self {
        Self::Tensor(tensor.view())
    }
}

impl<'a> From<&'a str> for Argument<'a> {
    fn from(text: &'a str) -> Self {
        Self::Text(text)
    }
}

impl<'a> From<&Argument<'a>> for Argument<'a> {
    fn from(argument: &Argument<'a>) -> Self {
        *argument
    }
}

/// A VM list of `arguments` read against the calling-convention types
/// `cconv` (`name` names the function in errors), with buffers on
/// `device`. Too few arguments are left for IREE's invocation to refuse,
/// as in IREE's tool.
pub(crate) fn argument_list(
    device: &sys::Device,
    name: &str,
    cconv: &[u8],
    arguments: &[Argument<'_>],
) -> Result<sys::List, Error> {
    let list = sys::List::new(arguments.len())
        .map_err(|status| Error::Call { function: name.to_owned(), source: status.into() })?;
    let all_types = cconv;
    let mut cconv: &[u8] = cconv;
    // Files read so far, by the path as given: `+FILE` and `*FILE`
    // continue where the previous read of the same path stopped.
    let mut streams: Vec<InputStream> = Vec::new();
    for (index, argument) in arguments.iter().enumerate() {
        let input = match argument {
            Argument::Tensor(tensor) => format!("{tensor:?}"),
            Argument::Text(text) => xplug_npy::excerpt(text),
        };
        let problem = |problem: String| Error::Input {
            function: name.to_owned(),
            index,
            input: input.clone(),
            problem,
        };
        let iree_error = |status: sys::Status| {
            let mut source = IreeStatus::from(status);
            // IREE quotes the part of the input it choked on, whole.
            source.text = xplug_npy::excerpt_at(&source.text, 4 * xplug_npy::QUOTE_LIMIT);
            Error::Argument { function: name.to_owned(), index, input: input.clone(), source }
        };
        let next_type = |cconv: &mut &[u8]| match cconv.split_first() {
            Some((&expected, rest)) => {
                *cconv = rest;
                Ok(expected)
            }
            None => Err(problem(format!(
                "`{name}` takes {} argument(s); this one is one too many",
                all_types.len()
            ))),
        };
        let push_tensor = |expected: u8, tensor: &TensorView<'_>| {
            if expected != b'r' {
                return Err(problem(format!(
                    "`{name}` takes {} here, not a tensor",
                    cconv_type_name(expected)
                )));
            }
            let view =
                sys::BufferView::from_data(device, tensor.shape(), tensor.element_type().0, tensor.data())
                    .map_err(iree_error)?;
            list.push_view(&view).map_err(iree_error)
        };
        let push_primitive = |expected: u8, text: &str, null: bool| {
            list.push_primitive(expected, text, null).map_err(iree_error)
        };
        let text = match argument {
            Argument::Tensor(tensor) => {
                push_tensor(next_type(&mut cconv)?, tensor)?;
                continue;
            }
            Argument::Text(raw) => raw.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b'),
        };
        if text.is_empty() {
            return Err(problem("no value given; give a number, a tensor or @FILE.npy".into()));
        }
        if text == "(null)" || text == "(ignored)" {
            push_primitive(next_type(&mut cconv)?, text, true)?;
        } else if let Some(mode @ ('@' | '+' | '*')) = text.chars().next() {
            // One array (`@` from the start of the file, `+` from where
            // the last read of it stopped) or every array left (`*`).
            let path = &text[1..];
            if !path.ends_with(".npy") {
                return Err(problem(
                    "only .npy files are read for `@FILE`, `+FILE` and `*FILE` inputs, as iree-run-module \
                     reads them (raw bytes need the type: `4xf32=@FILE`)"
                        .into(),
                ));
            }
            let stream = InputStream::open(&mut streams, path, mode != '@')?;
            while mode != '*' || stream.offset < stream.bytes.len() {
                let (array, used) = xplug_npy::decode_prefix(&stream.bytes[stream.offset..])
                    .map_err(|source| Error::Npy { path: path.into(), source })?;
                stream.offset += used;
                push_tensor(next_type(&mut cconv)?, &Tensor::from_npy(array)?.view())?;
                if mode != '*' {
                    break;
                }
            }
        } else if let Some(storage) = text.strip_prefix('&') {
            // Storage for an output: the buffer alone, no metadata.
            let expected = next_type(&mut cconv)?;
            if expected != b'r' {
                return Err(problem(format!(
                    "`{name}` takes {} here, not a buffer",
                    cconv_type_name(expected)
                )));
            }
            let view = tensor_view(device, storage, &mut streams, &problem, &iree_error)?;
            list.push_buffer_of(&view).map_err(iree_error)?;
        } else if cconv.first() != Some(&b'r') {
            push_primitive(next_type(&mut cconv)?, text, false)?;
        } else {
            next_type(&mut cconv)?;
            if !text.contains(['=', 'x']) {
                return Err(problem(
                    "a tensor needs at least a shape and type (`4x2xf32=...`; `f32=7` for 0-d)".into(),
                ));
            }
            let view = tensor_view(device, text, &mut streams, &problem, &iree_error)?;
            list.push_view(&view).map_err(iree_error)?;
        }
    }
    Ok(list)
}

/// A tensor input as a buffer view: `TYPE=@FILE`/`TYPE=+FILE` from raw
/// bytes, anything else parsed by IREE (`4xf32=1,2,3,4`).
fn tensor_view(
    device: &sys::Device,
    text: &str,
    streams: &mut Vec<InputStream>,
    problem: &dyn Fn(String) -> Error,
    iree_error: &dyn Fn(sys::Status) -> Error,
) -> Result<sys::BufferView, Error> {
    match text.split_once('=') {
        Some((metadata, contents)) if contents.starts_with(['@', '+']) => {
            let stream = InputStream::open(streams, &contents[1..], contents.starts_with('+'))?;
            raw_view(device, metadata, stream).map_err(|error| match error {
                RawInput::Iree(status) => iree_error(status),
                RawInput::Short { needed, left } => {
                    problem(format!("the type needs {needed} bytes but the file holds {left} more"))
                }
            })
        }
        _ => sys::BufferView::parse(device, text).map_err(iree_error),
    }
}

/// A buffer view of type and shape `metadata` (`4xf32`) over the next
/// bytes of `stream`, as iree-run-module reads `--input=4xf32=@FILE`.
fn raw_view(
    device: &sys::Device,
    metadata: &str,
    stream: &mut InputStream,
) -> Result<sys::BufferView, RawInput> {
    let (shape, element_type) = sys::parse_shape_and_element_type(metadata).map_err(RawInput::Iree)?;
    let needed = sys::dense_byte_size(&shape, element_type).map_err(RawInput::Iree)?;
    let left = stream.bytes.len() - stream.offset;
    if needed > left {
        return Err(RawInput::Short { needed, left });
    }
    let data = &stream.bytes[stream.offset..stream.offset + needed];
    stream.offset += needed;
    sys::BufferView::from_data(device, &shape, element_type, data).map_err(RawInput::Iree)
}

/// What a calling-convention type is, for messages.
fn cconv_type_name(cconv: u8) -> String {
    match cconv {
        b'i' => "an i32".to_owned(),
        b'I' => "an i64".to_owned(),
        b'f' => "an f32".to_owned(),
        b'F' => "an f64".to_owned(),
        b'r' => "a reference (a tensor)".to_owned(),
        other => format!("calling-convention type `{}`", char::from(other)),
    }
}

/// A file an input reads from (`@FILE`, `+FILE`, `*FILE`, `TYPE=@FILE`),
/// read whole through [`crate::files::read_bounded`], and how far the
/// inputs so far have read it.
struct InputStream {
    path: String,
    bytes: Vec<u8>,
    offset: usize,
}

impl InputStream {
    /// The stream of `path` (as given): from the start unless `append`
    /// (then where the last read of the same path stopped, or the start
    /// the first time), as iree-run-module's stream list keeps them.
    fn open<'a>(streams: &'a mut Vec<Self>, path: &str, append: bool) -> Result<&'a mut Self, Error> {
        let index = match streams.iter().position(|stream| stream.path == path) {
            Some(index) => index,
            None => {
                let bytes = files::read_bounded(Path::new(path), "the input file", files::INPUT_LIMIT)?;
                streams.push(Self { path: path.to_owned(), bytes, offset: 0 });
                streams.len() - 1
            }
        };
        let stream = &mut streams[index];
        if !append {
            stream.offset = 0;
        }
        Ok(stream)
    }
}

/// Why a `TYPE=@FILE` input could not be made.
enum RawInput {
    /// IREE refused the type or the view.
    Iree(sys::Status),
    /// The file holds fewer bytes than the type needs.
    Short { needed: usize, left: usize },
}
