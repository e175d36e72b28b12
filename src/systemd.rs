//! systemd's readiness protocol (sd_notify), as Tarantool 2.6 speaks it: under
//! a `Type=notify` unit (Debian's `tarantool@.service`), `$NOTIFY_SOCKET` names
//! a datagram socket; the first `box.cfg{}` reports `STATUS=loading`, then
//! `STATUS=running`, and `READY=1` goes when the script's main chunk ends and
//! the process stays up (what 2.6 logs as "entering the event loop").

use std::os::unix::net::UnixDatagram;

/// Sends `message` to the socket `$NOTIFY_SOCKET` names, if it names one; a
/// failure is logged, never fatal (2.6 logs and goes on).
pub fn notify(message: &str) {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else { return };
    if let Err(e) = send(&target.to_string_lossy(), message) {
        tracing::warn!(error = %e, message, "systemd: failed to send message");
    }
}

fn send(target: &str, message: &str) -> std::io::Result<usize> {
    let socket = UnixDatagram::unbound()?;
    // '@' names a socket in the abstract namespace.
    if let Some(name) = target.strip_prefix('@') {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        return socket.send_to_addr(message.as_bytes(), &addr);
    }
    socket.send_to(message.as_bytes(), target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_reach_a_path_and_an_abstract_socket() {
        let dir = std::env::temp_dir().join(format!("oncebox-notify-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("notify.sock");
        let _ = std::fs::remove_file(&path);
        let receiver = UnixDatagram::bind(&path).unwrap();
        send(&path.to_string_lossy(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        let name = format!("oncebox-notify-test-{}", std::process::id());
        use std::os::linux::net::SocketAddrExt;
        let abstract_receiver =
            UnixDatagram::bind_addr(&std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        send(&format!("@{name}"), "STATUS=running").unwrap();
        let n = abstract_receiver.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STATUS=running");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
