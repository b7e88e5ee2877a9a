.PHONY: run test build clean

# Build and run the server on its embedded defaults (SQLite, dev mail outbox, generated keys).
run:
	./scripts/run

# Install what is missing, start a throwaway PostgreSQL, and run every test suite.
test:
	./scripts/test

build:
	swift build --package-path Server

clean:
	rm -rf .build Server/.build .build-consumer
