//! The packets between the gateway and a warm runtime (a zygote or one of its confined
//! runtimes): a SOCK_SEQPACKET socketpair, a JSON header with descriptors (SCM_RIGHTS) one
//! way, JSON messages the other.

use super::*;

/// A SOCK_SEQPACKET socketpair to a runtime: the gateway's end, non-blocking and driven by
/// tokio, and the end the runtime gets.
pub(super) fn socket_pair() -> Result<(UnixDatagram, OwnedFd), String> {
    let (ours, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| format!("socketpair: {e}"))?;
    rustix::io::ioctl_fionbio(&ours, true).map_err(|e| format!("non-blocking socket: {e}"))?;
    let sock = UnixDatagram::from_std(std::os::unix::net::UnixDatagram::from(ours))
        .map_err(|e| format!("registering the socket: {e}"))?;
    Ok((sock, theirs))
}

/// Sends `header` and `fds` (SCM_RIGHTS) as one packet on `sock`.
pub(super) fn send_on(sock: &UnixDatagram, header: &[u8], fds: &[&OwnedFd]) -> Result<(), String> {
    let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !borrowed.is_empty() && !control.push(SendAncillaryMessage::ScmRights(&borrowed)) {
        return Err("too many descriptors".into());
    }
    rustix::net::sendmsg(
        sock,
        &[IoSlice::new(header)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
    .map(drop)
    .map_err(|e| format!("handing the call over: {e}"))
}

/// The next message from a zygote (or one of its confined runtimes).
pub(super) async fn message(sock: &UnixDatagram) -> Result<Value, String> {
    let mut buf = vec![0u8; 64 * 1024];
    match sock.recv(&mut buf).await {
        Ok(0) => Err("the zygote went away".into()),
        Ok(n) => {
            serde_json::from_slice(&buf[..n]).map_err(|e| format!("a message from the zygote: {e}"))
        }
        Err(e) => Err(format!("reading from the zygote: {e}")),
    }
}
