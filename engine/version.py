"""The engine's version: part of every result's identity (scenario hash, seed, version).
Bump it whenever a change alters any number a simulation produces."""

ENGINE_VERSION = "0.4.2"
