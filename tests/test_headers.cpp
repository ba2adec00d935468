// The translation unit that builds the test drivers' shared precompiled header
// (tests/CMakeLists.txt); it has no code of its own.
