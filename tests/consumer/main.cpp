// The public header from C++.
#include <m40/m40.h>
#include <cstdio>

int main() {
    std::printf("consumer (C++): libm40 %s, status 0 = %s\n", m40_version(), m40_status_str(M40_OK));
    return 0;
}
