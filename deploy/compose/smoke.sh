#!/usr/bin/env bash
# smoke.sh BASE_URL: proves that the proxy at BASE_URL rate-limits.
#
# The deployment's rule limits each user (header x-user-id) to 2 requests per
# second and 10 per minute. The script
#   1. waits (up to SMOKE_WAIT seconds, default 120) until a request comes
#      back 200 with a RateLimit-Policy header: the proxy is up and the filter
#      has reached Redis;
#   2. sends requests as one new user until one is refused, at most
#      SMOKE_REQUESTS (default 20): the first must be admitted, and a 429
#      must come;
#   3. checks the 429: Retry-After (whole seconds, at least 1), RateLimit-Policy
#      and RateLimit (IETF draft 10), and the JSON body.
# It exits 0 when all holds, 1 otherwise, printing what it saw.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 BASE_URL" >&2
  exit 2
fi
base=${1%/}
path=${SMOKE_PATH:-/smoke}
wait_seconds=${SMOKE_WAIT:-120}
max_requests=${SMOKE_REQUESTS:-20}
run="$(date +%s)-$$-$RANDOM"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# get USER: one GET as USER; headers in $tmp/headers, body in $tmp/body,
# the status on stdout (000 if the request failed).
get() {
  local code
  code=$(curl -sS -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' --max-time 5 \
    -H "x-user-id: $1" "$base$path" 2>"$tmp/curl") || code=000
  echo "$code"
}

# header NAME: the value of the last response's header NAME, or nothing.
header() {
  tr -d '\r' <"$tmp/headers" | awk -v name="$1" '
    index(tolower($0), tolower(name) ":") == 1 { sub(/^[^:]*:[ \t]*/, ""); print; exit }'
}

fail() {
  echo "smoke: FAIL: $*" >&2
  if [ -s "$tmp/headers" ]; then
    echo "--- last response headers:" >&2
    tr -d '\r' <"$tmp/headers" >&2
    echo "--- body:" >&2
    head -c 500 "$tmp/body" >&2 || true
    echo >&2
  fi
  if [ -s "$tmp/curl" ]; then
    echo "--- curl: $(cat "$tmp/curl")" >&2
  fi
  exit 1
}

# 1. Ready: admitted, with the filter's headers.
deadline=$((SECONDS + wait_seconds))
attempt=0
while :; do
  attempt=$((attempt + 1))
  code=$(get "smoke-ready-$run-$attempt")
  if [ "$code" = 200 ] && [ -n "$(header RateLimit-Policy)" ]; then
    break
  fi
  if [ $SECONDS -ge $deadline ]; then
    fail "not ready after ${wait_seconds}s: last status $code, RateLimit-Policy '$(header RateLimit-Policy)'"
  fi
  sleep 1
done
echo "smoke: ready after $attempt attempt(s): RateLimit-Policy: $(header RateLimit-Policy)"

# 2. One new user until refused.
user="smoke-$run"
admitted=0
code=
for ((i = 1; i <= max_requests; i++)); do
  code=$(get "$user")
  case "$code" in
  200) admitted=$((admitted + 1)) ;;
  429) break ;;
  *) fail "request $i as $user: status $code, want 200 or 429" ;;
  esac
done
[ "$admitted" -ge 1 ] || fail "the first request of a new user was refused"
[ "$code" = 429 ] || fail "no 429 in $max_requests requests as $user"

# 3. The refusal says why and for how long.
retry=$(header Retry-After)
policy=$(header RateLimit-Policy)
limit=$(header RateLimit)
[[ "$retry" =~ ^[1-9][0-9]*$ ]] || fail "429 without a valid Retry-After: '$retry'"
[[ "$policy" == *";q="*";w="* ]] || fail "429 without a valid RateLimit-Policy: '$policy'"
[[ "$limit" == *";r="*";t="* ]] || fail "429 without a valid RateLimit: '$limit'"
grep -q '"error":"rate_limited"' "$tmp/body" || fail "429 body is not the filter's: $(head -c 200 "$tmp/body")"

echo "smoke: ok: $admitted admitted, then 429 with Retry-After: $retry, RateLimit-Policy: $policy, RateLimit: $limit"
