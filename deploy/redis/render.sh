#!/bin/sh
# render.sh TEMPLATE > FILE: writes an ACL file for redis-server --aclfile
# from users.acl, users-webdis.acl or users-cluster.acl, with each
# placeholder NAME_PASSWORD_SHA256 replaced by the SHA-256 of
# $RATELIMIT_NAME_PASSWORD, so that the file holds no password. Redis
# refuses to start with a placeholder left in.
set -eu
template=${1:?usage: render.sh TEMPLATE > FILE}
script=
for name in FILTER OPERATOR WEBDIS REPLICATION ADMIN; do
	grep -q "#${name}_PASSWORD_SHA256" "$template" || continue
	eval "pw=\${RATELIMIT_${name}_PASSWORD:-}"
	if [ -z "$pw" ]; then
		echo "render.sh: $template needs \$RATELIMIT_${name}_PASSWORD" >&2
		exit 1
	fi
	hash=$(printf %s "$pw" | sha256sum | cut -d' ' -f1)
	script="${script}s/#${name}_PASSWORD_SHA256/#${hash}/;"
done
sed "$script" "$template"
