# Sourced by scripts/setup.sh and scripts/setup-ros.sh: the venv installs they share.

# pip_install_pinned WHO VENV REQUIREMENTS: installs the pinned REQUIREMENTS into VENV
# when they changed since its last install (a SHA-256 stamp kept in VENV), saying so
# as WHO.
pip_install_pinned() {
    local who=$1 venv=$2 requirements=$3
    local stamp="$venv/.requirements.sha256" wanted
    wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
        echo "$who: installing $requirements"
        "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$requirements"
        echo "$wanted" >"$stamp"
    fi
}
