@0xd7c3b6a2e1f00a11;
using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("test");
# Test-only shapes that well-behaved peers never send.
struct Nest {
  next @0 :Nest;
}
