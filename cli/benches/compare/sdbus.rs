//! sd-bus, systemd's D-Bus client library (what `busctl` uses), driven in-process for
//! scenario 6: the system's `libsystemd.so.0` is loaded at run time with `libloading` (no
//! development headers or link-time dependency needed), and the few functions the benchmark
//! calls are declared here by hand from sd-bus's public API (`sd-bus.h`, systemd 221 and
//! later).
//!
//! This is the only place in netmirror with `unsafe` code: calling C through function
//! pointers cannot be checked by the compiler. The workspace denies `unsafe_code`; the three
//! items that call C (`symbol`, `impl SdBus`, `impl Drop for SdBus`) allow it, and every unsafe
//! block says why it is sound.

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::ptr;

use anyhow::{Context, bail};
use libloading::Library;

/// The library's soname, found by the dynamic loader as any program's libsystemd is.
const LIBSYSTEMD: &str = "libsystemd.so.0";

/// `sd_bus_error`: a name and a message, both owned by the library when `need_free` is set.
#[repr(C)]
struct SdBusError {
    name: *const c_char,
    message: *const c_char,
    need_free: c_int,
}

impl SdBusError {
    /// `SD_BUS_ERROR_NULL`.
    const fn null() -> Self {
        Self {
            name: ptr::null(),
            message: ptr::null(),
            need_free: 0,
        }
    }
}

/// `sd_bus` and `sd_bus_message` are opaque to their users.
type Bus = c_void;
type Message = c_void;

/// `int sd_bus_new(sd_bus **ret)`
type NewFn = unsafe extern "C" fn(*mut *mut Bus) -> c_int;
/// `int sd_bus_set_address(sd_bus *bus, const char *address)`
type SetAddressFn = unsafe extern "C" fn(*mut Bus, *const c_char) -> c_int;
/// `int sd_bus_set_bus_client(sd_bus *bus, int b)`
type SetBusClientFn = unsafe extern "C" fn(*mut Bus, c_int) -> c_int;
/// `int sd_bus_start(sd_bus *bus)`
type StartFn = unsafe extern "C" fn(*mut Bus) -> c_int;
/// `int sd_bus_call_method(sd_bus *bus, const char *destination, const char *path,
/// const char *interface, const char *member, sd_bus_error *ret_error,
/// sd_bus_message **reply, const char *types, ...)`
type CallMethodFn = unsafe extern "C" fn(
    *mut Bus,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *mut SdBusError,
    *mut *mut Message,
    *const c_char,
    ...
) -> c_int;
/// `int sd_bus_message_skip(sd_bus_message *m, const char *types)`
type SkipFn = unsafe extern "C" fn(*mut Message, *const c_char) -> c_int;
/// `sd_bus_message *sd_bus_message_unref(sd_bus_message *m)`
type MessageUnrefFn = unsafe extern "C" fn(*mut Message) -> *mut Message;
/// `void sd_bus_error_free(sd_bus_error *e)`
type ErrorFreeFn = unsafe extern "C" fn(*mut SdBusError);
/// `sd_bus *sd_bus_flush_close_unref(sd_bus *bus)`
type FlushCloseUnrefFn = unsafe extern "C" fn(*mut Bus) -> *mut Bus;

/// A started sd-bus connection to one bus, as a client (authenticated, `Hello` done).
///
/// Not `Send`: sd-bus objects belong to the thread that made them, and this one stays on it.
pub(crate) struct SdBus {
    bus: *mut Bus,
    call_method: CallMethodFn,
    skip: SkipFn,
    message_unref: MessageUnrefFn,
    error_free: ErrorFreeFn,
    flush_close_unref: FlushCloseUnrefFn,
    /// Keeps the function pointers above valid; dropped after `Drop::drop` closes the bus.
    _lib: Library,
}

/// Looks `name` up in `lib` as a function of type `T`.
///
/// # Safety
///
/// `T` must be the function's real C signature.
#[allow(unsafe_code)]
unsafe fn symbol<T: Copy>(lib: &Library, name: &str) -> anyhow::Result<T> {
    // SAFETY: the caller vouches for `T`; the pointer is copied out of the `Symbol`, and every
    // caller keeps `lib` loaded for as long as it uses it (see `SdBus::_lib`).
    let symbol =
        unsafe { lib.get::<T>(name) }.with_context(|| format!("{LIBSYSTEMD} has no `{name}`"))?;
    Ok(*symbol)
}

/// A negative errno return of sd-bus as an error.
fn check(what: &str, r: c_int) -> anyhow::Result<c_int> {
    if r < 0 {
        bail!("{what}: {}", std::io::Error::from_raw_os_error(-r));
    }
    Ok(r)
}

#[allow(unsafe_code)]
impl SdBus {
    /// Loads libsystemd and connects to the bus at `address` (a D-Bus address string).
    pub(crate) fn connect(address: &str) -> anyhow::Result<Self> {
        // SAFETY: loading libsystemd runs its ELF constructors, which only set up its own
        // state; it is the library `busctl` and half the system already load.
        let lib = unsafe { Library::new(LIBSYSTEMD) }.with_context(|| {
            format!("cannot load {LIBSYSTEMD} (is systemd's library installed?)")
        })?;
        // SAFETY (all six): each type above is the declaration of sd-bus.h for that name.
        let (new, set_address, set_bus_client, start) = unsafe {
            (
                symbol::<NewFn>(&lib, "sd_bus_new")?,
                symbol::<SetAddressFn>(&lib, "sd_bus_set_address")?,
                symbol::<SetBusClientFn>(&lib, "sd_bus_set_bus_client")?,
                symbol::<StartFn>(&lib, "sd_bus_start")?,
            )
        };
        // SAFETY: as above.
        let mut this = unsafe {
            Self {
                bus: ptr::null_mut(),
                call_method: symbol(&lib, "sd_bus_call_method")?,
                skip: symbol(&lib, "sd_bus_message_skip")?,
                message_unref: symbol(&lib, "sd_bus_message_unref")?,
                error_free: symbol(&lib, "sd_bus_error_free")?,
                flush_close_unref: symbol(&lib, "sd_bus_flush_close_unref")?,
                _lib: lib,
            }
        };
        let address = CString::new(address).context("a D-Bus address with a NUL byte")?;
        // SAFETY: `sd_bus_new` writes a new bus object to the pointer it is given; from then on
        // `this.bus` is that object (or null on failure), released in `Drop`.
        check("sd_bus_new", unsafe { new(&raw mut this.bus) })?;
        // SAFETY: `this.bus` is a live, not yet started bus object; `address` outlives the call
        // (sd-bus copies it).
        check("sd_bus_set_address", unsafe {
            set_address(this.bus, address.as_ptr())
        })?;
        // SAFETY: `this.bus` is a live, not yet started bus object.
        check("sd_bus_set_bus_client", unsafe {
            set_bus_client(this.bus, 1)
        })?;
        // SAFETY: `this.bus` is a live bus object with an address; `sd_bus_start` connects,
        // authenticates and sends `Hello`, blocking, as `bus_client` was set.
        check("sd_bus_start", unsafe { start(this.bus) })?;
        Ok(this)
    }

    /// One `org.freedesktop.DBus.Properties.Get` (or any method taking two strings and
    /// returning one variant), blocking, with the reply's variant walked (`skip`): what
    /// `busctl get-property` does per call, without the printing.
    pub(crate) fn call_ss_v(
        &mut self,
        destination: &CStr,
        path: &CStr,
        interface: &CStr,
        member: &CStr,
        args: [&CStr; 2],
    ) -> anyhow::Result<()> {
        let mut error = SdBusError::null();
        let mut reply: *mut Message = ptr::null_mut();
        // SAFETY: `self.bus` is a started bus object used only from this thread; every string
        // is NUL-terminated and outlives the call; `"ss"` matches the two `const char *`
        // variadic arguments; `error` and `reply` are valid out-pointers.
        let r = unsafe {
            (self.call_method)(
                self.bus,
                destination.as_ptr(),
                path.as_ptr(),
                interface.as_ptr(),
                member.as_ptr(),
                &raw mut error,
                &raw mut reply,
                c"ss".as_ptr(),
                args[0].as_ptr(),
                args[1].as_ptr(),
            )
        };
        if r < 0 {
            let name = if error.name.is_null() {
                String::new()
            } else {
                // SAFETY: a set error name is a NUL-terminated string owned by `error`, alive
                // until `sd_bus_error_free` below.
                unsafe { CStr::from_ptr(error.name) }
                    .to_string_lossy()
                    .into_owned()
            };
            // SAFETY: `error` was filled by sd-bus (or is still null), freed once.
            unsafe { (self.error_free)(&raw mut error) };
            bail!(
                "sd_bus_call_method: {} {name}",
                std::io::Error::from_raw_os_error(-r)
            );
        }
        // SAFETY: on success `reply` is a message reference owned by us, sealed and positioned
        // at its body; `"v"` is its signature.
        let skipped = unsafe { (self.skip)(reply, c"v".as_ptr()) };
        // SAFETY: drops the one reference `sd_bus_call_method` gave us, once.
        unsafe { (self.message_unref)(reply) };
        check("sd_bus_message_skip", skipped)?;
        Ok(())
    }
}

#[allow(unsafe_code)]
impl Drop for SdBus {
    fn drop(&mut self) {
        if !self.bus.is_null() {
            // SAFETY: `self.bus` is our one reference to the bus object, released once; the
            // library stays loaded until `_lib` drops after this.
            unsafe { (self.flush_close_unref)(self.bus) };
        }
    }
}
