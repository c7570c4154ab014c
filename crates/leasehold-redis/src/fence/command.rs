//! Which commands a fenced write may run: write commands whose one key is their first argument,
//! checked against the server's own `COMMAND INFO`.

use redis::Value;

/// The most arguments a fenced command takes after its key (Lua's `unpack` has a stack limit).
pub const MAX_COMMAND_ARGS: usize = 4096;

/// The longest command name accepted (module commands such as `JSON.SET` included).
const MAX_COMMAND_NAME: usize = 64;

/// What `COMMAND INFO` says about a command: its arity, whether it writes, and where its keys are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeySpec {
    arity: i64,
    write: bool,
    movable_keys: bool,
    first_key: i64,
    last_key: i64,
    step: i64,
}

/// The command name, upper-cased, if it looks like one (letters, digits, `.`, `_`, `-`, `|`).
pub(crate) fn command_name(command: &str) -> Result<String, String> {
    let ok = !command.is_empty()
        && command.len() <= MAX_COMMAND_NAME
        && command
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'|'));
    if ok {
        Ok(command.to_ascii_uppercase())
    } else {
        Err(format!(
            "a command name is 1 to {MAX_COMMAND_NAME} ASCII letters, digits, '.', '_', '-' or '|'"
        ))
    }
}

impl KeySpec {
    /// Reads the reply of `COMMAND INFO <name>`; `None` when the server does not know the command.
    pub(crate) fn from_reply(reply: &Value) -> Option<Self> {
        let Value::Array(entries) = reply else {
            return None;
        };
        let Some(Value::Array(info)) = entries.first() else {
            return None;
        };
        let int = |i: usize| match info.get(i) {
            Some(Value::Int(n)) => Some(*n),
            _ => None,
        };
        let flags: Vec<String> = match info.get(2) {
            Some(Value::Array(flags) | Value::Set(flags)) => flags
                .iter()
                .filter_map(|f| match f {
                    Value::SimpleString(s) => Some(s.clone()),
                    Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    _ => None,
                })
                .collect(),
            _ => return None,
        };
        Some(Self {
            arity: int(1)?,
            write: flags.iter().any(|f| f == "write"),
            movable_keys: flags.iter().any(|f| f == "movablekeys"),
            first_key: int(3)?,
            last_key: int(4)?,
            step: int(5)?,
        })
    }

    /// Whether the command, given the key and `args` more arguments, writes that one key only.
    pub(crate) fn check(&self, args: usize) -> Result<(), String> {
        if !self.write {
            return Err(
                "it is not a write command (COMMAND INFO has no `write` flag); a fenced \
                 write runs a command that changes its key, such as SET, HSET, INCRBY or DEL"
                    .into(),
            );
        }
        if self.movable_keys || self.first_key != 1 {
            return Err(
                "its key is not its first argument; a fenced write runs a command \
                 whose one key comes right after its name"
                    .into(),
            );
        }
        // Positions after the name: the key is 1, the arguments 2..=n.
        let n = i64::try_from(args).unwrap_or(i64::MAX).saturating_add(1);
        let given = n + 1;
        let arity_ok = if self.arity >= 0 {
            given == self.arity
        } else {
            given >= -self.arity
        };
        if !arity_ok {
            let wanted = if self.arity >= 0 {
                format!("exactly {}", self.arity - 2)
            } else {
                format!("at least {}", -self.arity - 2)
            };
            return Err(format!(
                "it takes {wanted} arguments after the key, and {args} were given"
            ));
        }
        let last = if self.last_key < 0 {
            n + 1 + self.last_key
        } else {
            self.last_key
        };
        // The key after the first one, counted from the name.
        let next_key = 1 + self.step;
        if self.step > 0 && next_key <= last {
            return Err(format!(
                "with these arguments, argument {} after the key is a key too; a fenced write \
                 changes its one key only",
                self.step
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(arity: i64, flags: &[&str], first: i64, last: i64, step: i64) -> KeySpec {
        let reply = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"x".to_vec()),
            Value::Int(arity),
            Value::Array(
                flags
                    .iter()
                    .map(|f| Value::SimpleString((*f).into()))
                    .collect(),
            ),
            Value::Int(first),
            Value::Int(last),
            Value::Int(step),
        ])]);
        KeySpec::from_reply(&reply).unwrap_or_else(|| panic!("a spec"))
    }

    #[test]
    fn write_commands_on_their_first_key_pass() {
        let set = spec(-3, &["write", "denyoom"], 1, 1, 1);
        assert_eq!(set.check(1), Ok(()));
        assert_eq!(set.check(3), Ok(()), "SET k v PX 100");
        let hset = spec(-4, &["write"], 1, 1, 1);
        assert_eq!(hset.check(4), Ok(()));
        let del = spec(-2, &["write"], 1, -1, 1);
        assert_eq!(del.check(0), Ok(()));
        let mset = spec(-3, &["write"], 1, -1, 2);
        assert_eq!(mset.check(1), Ok(()), "MSET k v");
    }

    #[test]
    fn commands_that_would_touch_other_keys_or_read_only_are_refused() {
        let del = spec(-2, &["write"], 1, -1, 1);
        assert!(
            del.check(1)
                .unwrap_err()
                .contains("argument 1 after the key is a key")
        );
        let mset = spec(-3, &["write"], 1, -1, 2);
        assert!(mset.check(3).unwrap_err().contains("is a key too"));
        let lmove = spec(5, &["write"], 1, 2, 1);
        assert!(lmove.check(3).is_err());
        let get = spec(2, &["readonly"], 1, 1, 1);
        assert!(get.check(0).unwrap_err().contains("not a write command"));
        let sort = spec(-2, &["write", "movablekeys"], 1, 1, 1);
        assert!(sort.check(0).unwrap_err().contains("first argument"));
        let set = spec(-3, &["write"], 1, 1, 1);
        assert!(set.check(0).unwrap_err().contains("at least 1"));
        let getset = spec(3, &["write"], 1, 1, 1);
        assert!(getset.check(2).unwrap_err().contains("exactly 1"));
    }

    #[test]
    fn command_names_are_checked_before_anything_is_sent() {
        assert_eq!(command_name("json.set").as_deref(), Ok("JSON.SET"));
        for bad in ["", "SET x", "EVAL\n", &"A".repeat(65)] {
            assert!(command_name(bad).is_err(), "{bad:?}");
        }
        assert_eq!(KeySpec::from_reply(&Value::Array(vec![Value::Nil])), None);
    }
}
