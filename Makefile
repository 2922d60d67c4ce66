# zkrecipes build entry points. `make test` is what CI runs (.ci/run).
.PHONY: all deps lint test unit integration zk39 docker demo bench bench-ensemble release snapshot

all: test

deps:
	scripts/deps.sh

lint:
	scripts/lint.sh

# deps, lint, unit tests, integration tests (Java backend), the contract suite
# with the wire layer off, Docker backend tests, then a summary.
test:
	scripts/test.sh

# the persistent watch and cache tests against ZooKeeper 3.9 (deps.sh fetches its jars)
zk39:
	scripts/test-zk39.sh -race

unit:
	go test -race -count=1 -skip '^TestZK' ./...
	cd cmd/zkr && go test -race -count=1 ./...

.PHONY: robustness
# The robustness suite's long run: client processes on a 3-server ensemble under a seeded
# fault schedule, every recipe history checked with porcupine. DURATION (default 10m) and
# SEED (default: from the clock; printed) replay a run: make robustness DURATION=2m SEED=42
robustness:
	cd integration && ZK_TEST_BACKEND=$${ZK_TEST_BACKEND:-java} go test -race -count=1 -timeout 90m -v \
		-run '^TestRobustness_RecipesUnderFaults$$' ./robustness/ -robustness.duration=$${DURATION:-10m} -robustness.seed=$${SEED:-0}

.PHONY: robustness-hog
# The same beside HOG (default 2) busy-looping processes: the busy machine the election
# overlap of issue 29 came on. A failed run keeps its shared log, histories, porcupine pages
# and client logs in a directory it prints (under $$ZKRECIPES_ROBUSTNESS_DIR, else $$TMPDIR).
robustness-hog:
	cd integration && ZK_TEST_BACKEND=$${ZK_TEST_BACKEND:-java} go test -race -count=1 -timeout 90m -v \
		-run '^TestRobustness_RecipesUnderFaults$$' ./robustness/ -robustness.duration=$${DURATION:-5m} -robustness.seed=$${SEED:-0} \
		-robustness.cpu-hog=$${HOG:-2}

.PHONY: kerberos
# The Kerberos module's tests, then its tests against a real MIT KDC + GSSAPI ZooKeeper.
kerberos:
	cd kerberos && go test -race -count=1 ./...
	cd integration/kerberos && ZK_TEST_BACKEND=java go test -race -count=1 -timeout 5m ./...

# The integration stage of make test, as CI runs it: the integration module's packages under
# -race, the contract suite in two shards beside them (ZK_INTEGRATION_TIMEOUT, default 15m).
integration:
	scripts/integration.sh

# The Docker backend tests; a Docker daemon this target starts is stopped when it ends
# (one that was already running is left alone).
docker:
	export DOCKERD_PIDFILE="$${TMPDIR:-/tmp}/zkrecipes-dockerd.make.$$$$.pid"; \
	trap "$(CURDIR)/integration/docker/stop-docker.sh" EXIT; \
	integration/docker/ensure-docker.sh && integration/docker/build-image.sh && \
	cd zktest/docker && ZK_TEST_BACKEND=docker ZK_TEST_IMAGE=$${ZK_TEST_IMAGE:-zkrecipes/zookeeper:3.8-debian} \
		go test -race -count=1 ./...

# A throw-away ZooKeeper, three singleton workers as processes, kill -9 the
# leader, print the failover; deps.sh first installs what a fresh machine lacks.
demo:
	scripts/deps.sh >/dev/null
	cd integration && go run ./cmd/zkdemo

# One fresh local ZooKeeper; zkrecipes, go-zookeeper's zk.Lock, Curator 5.4 and kazoo 2.8
# on the same workloads, 3 repetitions, medians; writes integration/bench/results.{json,md}
# and chart.png. Then the scale curves (contended lock at 8-512 sessions, drain of 10-1,000
# waiters, memory per Session at 1-1,000): curves.jsonl, curves.md and curve-*.png there;
# CURVES=off skips them, CURVES=quick runs the smallest sizes once.
# (The Go-only benchmarks: cd integration && go test -run '^$$' -bench . ./bench/)
bench:
	cd integration && go run ./cmd/zkbench -out bench -curves $${CURVES:-full}

# The same on a 3-server ensemble on 127.0.0.1; writes integration/bench/ensemble/.
bench-ensemble:
	cd integration && go run ./cmd/zkbench -servers 3 -out bench/ensemble

# The release commit and the tags of every published module (vX.Y.Z, otelzk/, kerberos/,
# cmd/zkr/, zktest/, zktest/docker/), never pushed: make release VERSION=v0.1.0 [DRY_RUN=1]
# (docs/versioning.md). DRY_RUN=1 shows it in a throw-away clone.
release:
	@[ -n "$(VERSION)" ] || { echo "make release VERSION=vX.Y.Z [DRY_RUN=1]" >&2; exit 2; }
	scripts/release.sh $(if $(DRY_RUN),--dry-run) $(VERSION)

# zkr's release archives without publishing (.goreleaser.yaml): goreleaser release --snapshot
# --clean into dist/, then the linux/amd64 zkr runs version and help. Installs GoReleaser into
# bin/ first when it is missing (a long build: it is not part of deps or make test).
snapshot:
	scripts/goreleaser.sh
