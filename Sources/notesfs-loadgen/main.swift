import Foundation

// notesfs-loadgen: the load generator of scripts/bench-server. Loopback only;
// every run stops by itself after its seconds.
//
//   notesfs-loadgen setup --data DIR | --postgres CONNINFO --accounts N --out FILE
//   notesfs-loadgen push  --port P --tokens FILE --clients C --seconds S [--parked N]
//   notesfs-loadgen wake  --port P --tokens FILE --clients C --seconds S
//   notesfs-loadgen poll  --port P --tokens FILE --clients C --seconds S [--wait W]
exit(LoadGenerator.main(Array(CommandLine.arguments.dropFirst())))
