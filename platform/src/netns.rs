//! Opening sockets in another network namespace without moving the caller.
//!
//! A socket stays bound to the namespace it was created in. So a short-lived helper thread
//! enters the target namespace (`setns`), creates the sockets and hands them back; the
//! calling thread, and every other thread of the program, never changes namespace.
//!
//! A namespace file is opened without blocking (a FIFO given by mistake must not hang the
//! open) and must be on nsfs, the namespace file system; `setns` then checks that it is a
//! network namespace. A [`NetnsWatch`] tells later whether the name or path still leads to
//! the namespace that was opened (`ip netns delete` unmounts and removes the name; a
//! `/proc/PID/ns/net` path goes with its process): a program holding a socket keeps the
//! namespace alive, so that is all the kernel lets one see of its deletion.

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};

use crate::error::{Error, Result};

/// A network namespace to open the platform in.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Netns {
    /// The namespace of the calling thread.
    #[default]
    Current,
    /// A namespace named as `ip netns` does: `/run/netns/<name>`.
    Name(String),
    /// A namespace file such as `/proc/<pid>/ns/net` or a bind mount of one.
    Path(PathBuf),
    /// An open namespace file descriptor.
    Fd(Arc<OwnedFd>),
}

impl Netns {
    /// The namespace `ip netns add <name>` created.
    pub fn name(name: impl Into<String>) -> Self {
        Netns::Name(name.into())
    }

    /// A namespace by the path of its file.
    pub fn path(path: impl Into<PathBuf>) -> Self {
        Netns::Path(path.into())
    }

    /// A namespace by an open file descriptor.
    pub fn fd(fd: OwnedFd) -> Self {
        Netns::Fd(Arc::new(fd))
    }

    fn describe(&self) -> String {
        match self {
            Netns::Current => "(current)".to_owned(),
            Netns::Name(name) => name.clone(),
            Netns::Path(path) => path.display().to_string(),
            Netns::Fd(fd) => format!("fd {fd:?}"),
        }
    }

    /// The file of a namespace given by name or path.
    fn file_path(&self) -> Result<Option<PathBuf>> {
        match self {
            Netns::Current | Netns::Fd(_) => Ok(None),
            Netns::Name(name) => {
                if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                    return Err(Error::Netns {
                        netns: self.describe(),
                        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
                    });
                }
                Ok(Some(Path::new(NETNS_RUN_DIR).join(name)))
            }
            Netns::Path(path) => Ok(Some(path.clone())),
        }
    }

    pub(crate) fn open(&self) -> Result<Option<Arc<OwnedFd>>> {
        if let Netns::Fd(fd) = self {
            return Ok(Some(fd.clone()));
        }
        let Some(path) = self.file_path()? else {
            return Ok(None);
        };
        let err = |source: rustix::io::Errno| Error::Netns {
            netns: self.describe(),
            source: source.into(),
        };
        // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
        let fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(err)?;
        let on_nsfs = rustix::fs::fstatfs(&fd).map_err(err)?.f_type == NSFS_MAGIC;
        if !on_nsfs {
            return Err(Error::NotNetns {
                netns: self.describe(),
            });
        }
        Ok(Some(Arc::new(fd)))
    }

    /// Opens the namespace and remembers which one it is, to tell later whether its name
    /// or path still leads to it ([`NetnsWatch::deleted`]). Open sockets in it with
    /// [`NetnsWatch::netns`], so they are in exactly the namespace watched.
    pub fn watch(&self) -> Result<NetnsWatch> {
        let fd = self.open()?;
        let identity = match &fd {
            Some(fd) => Some(identity(&rustix::fs::fstat(fd).map_err(|errno| {
                Error::Netns {
                    netns: self.describe(),
                    source: errno.into(),
                }
            })?)),
            None => None,
        };
        Ok(NetnsWatch {
            netns: self.clone(),
            path: self.file_path()?,
            fd,
            identity,
        })
    }

    /// Runs `f` on a thread inside this namespace and returns its result (here, the sockets
    /// it created). For [`Netns::Current`], `f` runs on the calling thread.
    pub(crate) fn run_in<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        let Some(fd) = self.open()? else {
            return f();
        };
        let netns = self.describe();
        std::thread::scope(|scope| {
            let handle = scope.spawn(|| {
                move_into_link_name_space(fd.as_fd(), Some(LinkNameSpaceType::Network)).map_err(
                    |errno| match errno {
                        // Another kind of namespace (mount, user, ...).
                        rustix::io::Errno::INVAL => Error::NotNetns {
                            netns: netns.clone(),
                        },
                        errno => Error::Netns {
                            netns: netns.clone(),
                            source: errno.into(),
                        },
                    },
                )?;
                f()
            });
            match handle.join() {
                Ok(res) => res,
                Err(_) => Err(Error::Netns {
                    netns: netns.clone(),
                    source: std::io::Error::other("namespace helper thread panicked"),
                }),
            }
        })
    }
}

/// Where `ip netns add` puts the namespaces it names.
pub(crate) const NETNS_RUN_DIR: &str = "/run/netns";

/// `NSFS_MAGIC`: the file system of namespace files (`/proc/PID/ns/*` and their bind mounts).
const NSFS_MAGIC: rustix::fs::FsWord = 0x6e73_6673;

/// A namespace opened by [`Netns::watch`], and whether its name still leads to it.
#[derive(Debug, Clone)]
pub struct NetnsWatch {
    netns: Netns,
    path: Option<PathBuf>,
    fd: Option<Arc<OwnedFd>>,
    identity: Option<(u64, u64)>,
}

impl NetnsWatch {
    /// The namespace opened, by its file descriptor (the caller's own namespace when it was
    /// [`Netns::Current`]): give it to [`Config::with_netns`](crate::Config::with_netns).
    pub fn netns(&self) -> Netns {
        match &self.fd {
            Some(fd) => Netns::Fd(Arc::clone(fd)),
            None => Netns::Current,
        }
    }

    /// The namespace as the caller named it.
    pub fn name(&self) -> String {
        self.netns.describe()
    }

    /// Whether the namespace's name or path no longer leads to the namespace opened: the
    /// name was deleted (`ip netns delete`), or now names another namespace, or the process
    /// of a `/proc/PID/ns/net` path is gone. Always false for the caller's namespace and one
    /// given by file descriptor, which have no name to lose; false too when the file cannot
    /// be checked for another reason (permission).
    pub fn deleted(&self) -> bool {
        let (Some(path), Some(identity)) = (&self.path, self.identity) else {
            return false;
        };
        still_there(path, identity).is_some_and(|there| !there)
    }
}

/// Whether `path` is the namespace file `identity` names: `Some(false)` when it is gone or
/// another file, `None` when that cannot be told.
fn still_there(path: &Path, identity: (u64, u64)) -> Option<bool> {
    match rustix::fs::stat(path) {
        Ok(stat) => Some(self::identity(&stat) == identity),
        // The name was removed; a `/proc/PID` of a process that ended.
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::SRCH) => Some(false),
        Err(_) => None,
    }
}

/// A namespace's identity: the device and inode of its nsfs file.
fn identity(stat: &rustix::fs::Stat) -> (u64, u64) {
    (stat.st_dev, stat.st_ino)
}
