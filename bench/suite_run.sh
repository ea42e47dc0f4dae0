# Shared by the benchmark suites: run NAME ARGS... runs `$piola ARGS...` with its output in
# $out/NAME.txt, logs the command, its time and its last lines to $out/suite.log, and records a
# failure in $out/failures.txt (the suite goes on). Needs $out and $piola set.
run() {
  name=$1
  shift
  echo "== $name: $*" | tee -a "$out/suite.log"
  start=$(date +%s)
  if ! "$piola" "$@" > "$out/$name.txt" 2>&1; then
    echo "$name" >> "$out/failures.txt"
  fi
  echo "   $(($(date +%s) - start)) s" | tee -a "$out/suite.log"
  tail -n 4 "$out/$name.txt" | tee -a "$out/suite.log"
}
