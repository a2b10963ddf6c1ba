//! Spare children ([`Spare`]): the gateway's side. After a call's cleanup it asks the runtime
//! that served the call for a spare (`{"spare": true}`); before the next call of the zygote
//! it reads every answer still unread, so each spare is a resident of the slot — spared by
//! that call's sweep — before anything runs there; the spare of the runtime a call goes to
//! stops being one (it becomes the call's process, within the call's process limit).

use super::socket::message;
use super::*;

impl Zygote {
    /// Reads the answers about spares asked for after earlier calls and counts each spare
    /// among the slot's residents. A confined runtime that went away meanwhile is let go;
    /// the zygote itself not answering is an error (it is replaced).
    pub(super) async fn settle_spares(&mut self) -> Result<(), String> {
        if self.spare == Spare::Asked {
            self.spare = match tokio::time::timeout(ANSWER_TIMEOUT, message(&self.sock)).await {
                Ok(Ok(answer)) => spare_of(&answer)?,
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err("no answer about its spare within 5 s".into()),
            };
            self.keep_spare(self.spare);
        }
        let mut i = 0;
        while i < self.confined.len() {
            if self.confined[i].spare == Spare::Asked {
                let answer =
                    tokio::time::timeout(ANSWER_TIMEOUT, message(&self.confined[i].sock)).await;
                match answer
                    .map_err(|_| String::new())
                    .and_then(|a| spare_of(&a?))
                {
                    Ok(spare) => {
                        self.confined[i].spare = spare;
                        self.keep_spare(spare);
                    }
                    Err(_) => {
                        self.confined[i].spare = Spare::None;
                        self.let_go(i);
                        continue;
                    }
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// Whether none of its runtimes is still forking a spare: the answers already there are
    /// read now (without waiting), the others stay asked for. A call prefers such a zygote:
    /// one just given back is often still forking, and its call would wait for that.
    pub(super) fn spares_ready(&mut self) -> bool {
        let mut ready = true;
        for via in std::iter::once(None).chain((0..self.confined.len()).map(Some)) {
            let (spare, sock) = match via {
                Some(i) => (self.confined[i].spare, &self.confined[i].sock),
                None => (self.spare, &self.sock),
            };
            if spare != Spare::Asked {
                continue;
            }
            match answer_now(sock) {
                Some(Ok(spare)) => self.put_back_spare(via, spare),
                // A bad answer is dealt with by `settle_spares`, before the call.
                _ => ready = false,
            }
        }
        ready
    }

    /// The spare of the runtime a call goes to (`via`: a confined runtime's index, else the
    /// zygote), no longer counted among the residents: the runtime hands the call to it.
    pub(super) fn take_spare(&mut self, via: Option<usize>) -> Spare {
        let spare = match via {
            Some(i) => std::mem::take(&mut self.confined[i].spare),
            None => std::mem::take(&mut self.spare),
        };
        if let (Spare::Ready(pid), Some(cg)) = (spare, &mut self.cgroup) {
            cg.keep_resident(pid, false);
        }
        spare
    }

    /// A spare taken for a call that the runtime did not start (it answered "cold"): still
    /// there, a resident again.
    pub(super) fn put_back_spare(&mut self, via: Option<usize>, spare: Spare) {
        self.keep_spare(spare);
        match via {
            Some(i) if i < self.confined.len() => self.confined[i].spare = spare,
            Some(_) => {}
            None => self.spare = spare,
        }
    }

    /// Asks the runtime that served a call (`via`) for a spare for its next one; the answer
    /// is read by [`Self::settle_spares`].
    pub(super) fn ask_spare(&mut self, via: Option<usize>) {
        let sock = via.map_or(&self.sock, |i| &self.confined[i].sock);
        if super::socket::send_on(sock, br#"{"spare": true}"#, &[]).is_err() {
            return;
        }
        match via {
            Some(i) => self.confined[i].spare = Spare::Asked,
            None => self.spare = Spare::Asked,
        }
    }

    fn keep_spare(&mut self, spare: Spare) {
        if let (Spare::Ready(pid), Some(cg)) = (spare, &mut self.cgroup) {
            cg.keep_resident(pid, true);
        }
    }
}

/// A runtime's answer about its spare if it is there already; `None` when it is not yet.
fn answer_now(sock: &UnixDatagram) -> Option<Result<Spare, String>> {
    let mut buf = [0u8; 256];
    match sock.try_recv(&mut buf) {
        Ok(0) => Some(Err("the zygote went away".into())),
        Ok(n) => Some(
            serde_json::from_slice(&buf[..n])
                .map_err(|e| format!("a message from the zygote: {e}"))
                .and_then(|v| spare_of(&v)),
        ),
        Err(_) => None,
    }
}

/// A runtime's answer about its spare: its pid, or none when it could not fork one.
fn spare_of(answer: &Value) -> Result<Spare, String> {
    match answer.get("spare") {
        Some(Value::Null) => Ok(Spare::None),
        Some(pid) => pid
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .map(Spare::Ready)
            .ok_or_else(|| format!("answered {answer} about its spare")),
        None => Err(format!("answered {answer} when asked for a spare")),
    }
}
