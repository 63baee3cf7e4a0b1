//! Opening sockets in another network namespace without moving the caller.
//!
//! A socket stays bound to the namespace it was created in. So a short-lived helper thread
//! enters the target namespace (`setns`), creates the sockets and hands them back; the
//! calling thread, and every other thread of the program, never changes namespace.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

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

    fn open(&self) -> Result<Option<Arc<OwnedFd>>> {
        let err = |source| Error::Netns {
            netns: self.describe(),
            source,
        };
        let path = match self {
            Netns::Current => return Ok(None),
            Netns::Fd(fd) => return Ok(Some(fd.clone())),
            Netns::Name(name) => {
                if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                    return Err(err(std::io::Error::from(std::io::ErrorKind::InvalidInput)));
                }
                PathBuf::from("/run/netns").join(name)
            }
            Netns::Path(path) => path.clone(),
        };
        let file = File::open(&path).map_err(err)?;
        Ok(Some(Arc::new(OwnedFd::from(file))))
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
                    |errno| Error::Netns {
                        netns: netns.clone(),
                        source: errno.into(),
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
