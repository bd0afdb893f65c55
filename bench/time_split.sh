# shellcheck shell=bash
# Reading the trainer's end-of-run line "time split of rank R, the busiest (W s wall, S
# agent-steps/s): NAME P%, ..., other P%", and summarising repeated runs, for the bench scripts
# (sourced).
# split_line LOG: the line; split_wall LINE: W; split_steps LINE: S; split_share LINE NAME: P
# (NAME as printed, e.g. "work exchange (alltoallv)"); split_outside LINE: 100 minus the update's
# and the policy forward's shares, what issue 20's item 3 bounds.
split_line() { grep "time split" "$1"; }
split_wall() { sed -E 's/^time split of rank [^(]*\(([0-9.]+) s wall.*/\1/' <<<"$1"; }
split_steps() { sed -E 's/.* s wall, ([0-9]+) agent-steps\/s.*/\1/' <<<"$1"; }
split_share() {
  local name
  # Matched literally; a name escaped for sed -E, as these scripts once required, works too.
  name=$(sed -E 's/\\//g; s/[][()+.*?^$|{}]/\\&/g' <<<"$2")
  sed -E "s|.*$name ([0-9.]+)%.*|\1|" <<<"$1"
}
split_outside() {
  awk -v u="$(split_share "$1" "update fwd/bwd+optim")" -v f="$(split_share "$1" "policy forward")" \
    'BEGIN { printf "%.1f", 100 - u - f }'
}
# median FILE [DIGITS]: the median of the numbers in FILE (one a line), printed with DIGITS
# decimals (default 1); best FILE: the smallest of them.
median() {
  sort -g "$1" | awk -v d="${2:-1}" '{v[NR] = $1} END {
    printf "%.*f", d, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
best() { sort -g "$1" | head -n 1; }
