//! On Windows, a new file that only its owner may open: created with a
//! protected access list of one entry, full access for this process's
//! user, who is made its owner, so it never exists, even for a moment,
//! with the access rules its directory would have passed down.
//!
//! The descriptor is written in SDDL, `O:{user}D:P(A;;FA;;;{user})`, the
//! user being the SID of this process's token: `P` protects the list from
//! the directory's inheritable entries, and its one entry allows `FA`
//! (every file right) to the user. The user's own SID rather than the
//! owner-rights alias (`OW`): an elevated administrator's process would
//! otherwise make the Administrators group the owner, and Wine, which
//! keeps no list of its own but maps it to the file's Unix mode, knows the
//! user's SID and not the alias (seen under Wine 8: mode 0750 for this
//! list, mode 000, which no one but root may open, for the alias's).
//!
//! Why the crate calls Win32 itself: std's `OpenOptions` cannot pass a
//! security descriptor, and setting one after the file exists leaves a
//! window in which another user could open a handle that keeps its access.
//! **`unsafe`**: each call commented: the token opened, its user read and
//! written as text, the SDDL parsed, `CreateFileW` with it, what the calls
//! allocated freed, and the handles closed or taken into a `File`.

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt as _;
use std::os::windows::io::{FromRawHandle as _, RawHandle};
use std::path::Path;

/// The descriptor for `user` (a SID as text): `user` owns the file, and
/// the protected list lets `user` alone open it.
pub(crate) fn owner_only(user: &str) -> String {
    format!("O:{user}D:P(A;;FA;;;{user})")
}

const SDDL_REVISION_1: u32 = 1;
const TOKEN_QUERY: u32 = 0x0008;
const TOKEN_USER: u32 = 1;
/// `GetCurrentProcess()`'s documented pseudo-handle.
const CURRENT_PROCESS: RawHandle = -1isize as RawHandle;
const GENERIC_WRITE: u32 = 0x4000_0000;
const CREATE_NEW: u32 = 1;
const FILE_ATTRIBUTE_NORMAL: u32 = 0x80;
const INVALID_HANDLE_VALUE: RawHandle = -1isize as RawHandle;

/// `SECURITY_ATTRIBUTES`.
#[repr(C)]
struct SecurityAttributes {
    length: u32,
    descriptor: *mut c_void,
    inherit_handle: i32,
}

#[link(name = "advapi32")]
extern "system" {
    fn OpenProcessToken(process: RawHandle, access: u32, token: *mut RawHandle) -> i32;
    fn GetTokenInformation(
        token: RawHandle,
        class: u32,
        information: *mut c_void,
        length: u32,
        returned: *mut u32,
    ) -> i32;
    fn ConvertSidToStringSidW(sid: *mut c_void, text: *mut *mut u16) -> i32;
    fn ConvertStringSecurityDescriptorToSecurityDescriptorW(
        sddl: *const u16,
        revision: u32,
        descriptor: *mut *mut c_void,
        size: *mut u32,
    ) -> i32;
}

#[link(name = "kernel32")]
extern "system" {
    fn CreateFileW(
        name: *const u16,
        access: u32,
        share: u32,
        attributes: *const SecurityAttributes,
        disposition: u32,
        flags: u32,
        template: RawHandle,
    ) -> RawHandle;
    fn LocalFree(memory: *mut c_void) -> *mut c_void;
    fn CloseHandle(handle: RawHandle) -> i32;
}

/// `Err` with the last Win32 error when `succeeded` is 0.
fn check(succeeded: i32) -> io::Result<()> {
    if succeeded == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The SID of this process's user, as text (`S-1-5-21-…`).
#[allow(unsafe_code)]
pub(crate) fn process_user() -> io::Result<String> {
    let mut token: RawHandle = std::ptr::null_mut();
    // SAFETY: the pseudo-handle needs no closing; `token` is a valid place
    // for the handle the call opens (closed below).
    check(unsafe { OpenProcessToken(CURRENT_PROCESS, TOKEN_QUERY, &mut token) })?;
    // TOKEN_USER: a SID pointer first, into the same buffer; 512 bytes hold
    // it and the largest SID (68 bytes), u64s for the pointer's alignment.
    let mut buffer = [0u64; 64];
    let mut returned = 0u32;
    // SAFETY: `buffer` is writable for the length given, `returned` is a
    // valid place for a u32, and `token` was opened above for TOKEN_QUERY.
    let read = check(unsafe {
        GetTokenInformation(
            token,
            TOKEN_USER,
            buffer.as_mut_ptr().cast(),
            std::mem::size_of_val(&buffer) as u32,
            &mut returned,
        )
    });
    // SAFETY: `token` was opened above and is not used after this.
    unsafe { CloseHandle(token) };
    read?;
    let sid = buffer[0] as usize as *mut c_void;
    let mut text: *mut u16 = std::ptr::null_mut();
    // SAFETY: `sid` points into `buffer`, where the call above wrote the
    // token's user; `text` is a valid place for the string it allocates.
    check(unsafe { ConvertSidToStringSidW(sid, &mut text) })?;
    // SAFETY: the call allocated a NUL-terminated UTF-16 string at `text`;
    // it is read up to its NUL, then freed, and not used after.
    let user = unsafe {
        let length = (0..).take_while(|&at| *text.add(at) != 0).count();
        let user = String::from_utf16_lossy(std::slice::from_raw_parts(text, length));
        LocalFree(text.cast());
        user
    };
    Ok(user)
}

/// `text` as a NUL-terminated UTF-16 string.
fn wide(text: &std::ffi::OsStr) -> Vec<u16> {
    text.encode_wide().chain(std::iter::once(0)).collect()
}

/// Creates `path` new (never over an existing file or link: `CREATE_NEW`),
/// for writing, shared with no one while open, with [`owner_only`] for
/// this process's user.
#[allow(unsafe_code)]
pub(crate) fn create(path: &Path) -> io::Result<File> {
    let sddl = wide(owner_only(&process_user()?).as_ref());
    let mut descriptor: *mut c_void = std::ptr::null_mut();
    // SAFETY: `sddl` is NUL-terminated and outlives the call; `descriptor`
    // is a valid place for the pointer the call allocates (freed below);
    // the size is optional and not asked for.
    let parsed = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut descriptor,
            std::ptr::null_mut(),
        )
    };
    check(parsed)?;
    let attributes = SecurityAttributes {
        length: std::mem::size_of::<SecurityAttributes>() as u32,
        descriptor,
        inherit_handle: 0,
    };
    let name = wide(path.as_os_str());
    // SAFETY: `name` is NUL-terminated, `attributes` points at the
    // descriptor parsed above; both outlive the call, which copies the
    // descriptor into the new file.
    let handle = unsafe {
        CreateFileW(
            name.as_ptr(),
            GENERIC_WRITE,
            0,
            &attributes,
            CREATE_NEW,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        )
    };
    let created = io::Error::last_os_error();
    // SAFETY: `descriptor` was allocated by the parse above, with
    // LocalAlloc as its documentation says, and is not used after this.
    unsafe { LocalFree(descriptor) };
    if handle == INVALID_HANDLE_VALUE {
        return Err(created);
    }
    // SAFETY: `handle` was just returned open by CreateFileW and nothing
    // else owns it, so the `File` is its only owner and closes it once.
    Ok(unsafe { File::from_raw_handle(handle) })
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    const DACL_SECURITY_INFORMATION: u32 = 4;

    #[link(name = "advapi32")]
    extern "system" {
        fn GetFileSecurityW(
            name: *const u16,
            requested: u32,
            descriptor: *mut c_void,
            length: u32,
            needed: *mut u32,
        ) -> i32;
        fn ConvertSecurityDescriptorToStringSecurityDescriptorW(
            descriptor: *mut c_void,
            revision: u32,
            information: u32,
            sddl: *mut *mut u16,
            length: *mut u32,
        ) -> i32;
    }

    /// Whether this runs under Wine: only Wine's `system32` holds
    /// `wineboot.exe`.
    fn under_wine() -> bool {
        std::env::var_os("SystemRoot").is_some_and(|root| {
            Path::new(&root)
                .join("system32")
                .join("wineboot.exe")
                .is_file()
        })
    }

    /// The access list of `path`, in SDDL, as Windows reads it back.
    fn access_list(path: &Path) -> io::Result<String> {
        let name = wide(path.as_os_str());
        let mut buffer = vec![0u8; 4096];
        let mut needed = 0u32;
        // SAFETY: `name` is NUL-terminated; `buffer` is writable for the
        // length given; `needed` is a valid place for a u32.
        let read = unsafe {
            GetFileSecurityW(
                name.as_ptr(),
                DACL_SECURITY_INFORMATION,
                buffer.as_mut_ptr().cast(),
                buffer.len() as u32,
                &mut needed,
            )
        };
        if read == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut sddl: *mut u16 = std::ptr::null_mut();
        let mut length = 0u32;
        // SAFETY: `buffer` holds the descriptor just read; `sddl` and
        // `length` are valid places for what the call allocates and counts.
        let converted = unsafe {
            ConvertSecurityDescriptorToStringSecurityDescriptorW(
                buffer.as_mut_ptr().cast(),
                SDDL_REVISION_1,
                DACL_SECURITY_INFORMATION,
                &mut sddl,
                &mut length,
            )
        };
        if converted == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the call allocated `length` UTF-16 units (its NUL
        // included) at `sddl`; they are read once, then freed.
        let text = unsafe { std::slice::from_raw_parts(sddl, length as usize) };
        let text = String::from_utf16_lossy(text)
            .trim_end_matches('\0')
            .to_owned();
        // SAFETY: allocated by the call above with LocalAlloc; not used after.
        unsafe { LocalFree(sddl.cast()) };
        Ok(text)
    }

    /// The file is created with the owner-only list, protected, and read
    /// back as such; a second create at the same name fails.
    #[test]
    fn the_file_is_its_owners_alone() {
        let dir = std::env::temp_dir().join(format!("embacle-owner-only-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        let mut file = create(&path).unwrap();
        io::Write::write_all(&mut file, b"{}").unwrap();
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let user = process_user().unwrap();
        assert!(user.starts_with("S-1-"), "{user}");
        let list = access_list(&path).unwrap();
        println!("the access list read back: {list}");
        let expected = owner_only(&user);
        if under_wine() {
            // Wine keeps no list: it maps the one given to the file's Unix
            // mode (0750 here) and reads back a list made from that mode,
            // unprotected, the user's entry and one for SYSTEM.
            let user_entry = format!("(A;;FA;;;{user})");
            let others = list.replace(&user_entry, "").replace("(A;;FA;;;SY)", "");
            assert!(list.contains(&user_entry), "{list}");
            assert_eq!(others, "D:", "no one else: {list}");
        } else {
            assert_eq!(
                list,
                &expected["O:".len() + user.len()..],
                "protected, the user alone"
            );
        }
        let again = create(&path).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
