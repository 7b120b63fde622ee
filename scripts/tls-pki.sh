#!/usr/bin/env bash
# A throwaway certificate authority for the scheduler's TLS and the nodes' mutual TLS
# (scheduler/README.md, "TLS"), made with openssl: EC P-256 keys (PKCS#8 PEM, mode 0600).
#   tls-pki.sh DIR ca                  DIR/ca.pem, DIR/ca.key: a CA (refuses to replace one)
#   tls-pki.sh DIR server NAME SAN...  DIR/NAME.pem, DIR/NAME.key: a server certificate
#                                      (serverAuth) for the SANs, e.g. DNS:scheduler IP:127.0.0.1
#   tls-pki.sh DIR client HOST         DIR/HOST.pem, DIR/HOST.key: a node's client certificate
#                                      (clientAuth) whose one DNS subjectAltName is HOST, the
#                                      name the scheduler knows the node by
# Certificates are signed by DIR's CA and valid for DATCP_TLS_DAYS days (default 30).
set -euo pipefail
usage() { echo "usage: $0 DIR ca | DIR server NAME SAN... | DIR client HOST" >&2; exit 2; }
[ $# -ge 2 ] || usage
dir=$1 what=$2
shift 2
days=${DATCP_TLS_DAYS:-30}
mkdir -p "$dir"
umask 077

# signs DIR/$1.csr with the CA; $2: the extensions
sign() {
	openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
		-CAcreateserial -days "$days" -extfile <(printf '%s\n' "$2") -out "$dir/$1.pem" 2>/dev/null
	rm -f "$dir/$1.csr"
}

case $what in
ca)
	[ $# -eq 0 ] || usage
	[ ! -e "$dir/ca.key" ] || { echo "$0: $dir/ca.key exists" >&2; exit 1; }
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
		-subj "/CN=datcp throwaway CA" -addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign \
		-keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
	;;
server)
	[ $# -ge 2 ] || usage
	name=$1
	shift
	sans=$(IFS=,; echo "$*")
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
		-keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
	sign "$name" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=$sans"
	;;
client)
	[ $# -eq 1 ] || usage
	host=$1
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
		-keyout "$dir/$host.key" -out "$dir/$host.csr" 2>/dev/null
	sign "$host" "basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectAltName=DNS:$host"
	;;
*) usage ;;
esac
