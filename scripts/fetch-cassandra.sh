#!/usr/bin/env bash
# Fetch Apache Cassandra's jars (org.apache.cassandra:cassandra-all and its
# runtime dependencies) from Maven Central with mvn into
# ~/.cache/iolab/cassandra/VERSION/lib, where `iolab kv --engine cassandra`
# finds them (or set IOLAB_CASSANDRA_LIB). Idempotent and quiet when they
# are present. Cassandra 5.0 runs on JDK 17 (openjdk-17-jre-headless).
set -euo pipefail

VERSION="${IOLAB_CASSANDRA_VERSION:-5.0.2}"
DEST="${HOME}/.cache/iolab/cassandra/${VERSION}/lib"

if compgen -G "${DEST}/cassandra-all-${VERSION}.jar" >/dev/null; then
  exit 0
fi
for tool in mvn java; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch-cassandra: $tool is missing (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cat >"$work/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>iolab</groupId><artifactId>cassandra-fetch</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId><artifactId>cassandra-all</artifactId>
      <version>${VERSION}</version>
    </dependency>
  </dependencies>
</project>
POM
echo "fetch-cassandra: fetching cassandra-all ${VERSION} from Maven Central into ${DEST}" >&2
# A partial copy is never taken for a complete one: copy beside, then rename.
mkdir -p "$(dirname "$DEST")"
rm -rf "${DEST}.part"
mvn -q -B -Dstyle.color=never -f "$work/pom.xml" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="${DEST}.part" >&2
rm -rf "$DEST"
mv "${DEST}.part" "$DEST"
