/*
 * bcryptprimitives.dll for Wine 8, which ships none: Windows 10 and later
 * have it, and Rust's standard library (and getrandom) take their random
 * bytes from its ProcessPrng. This stand-in answers from RtlGenRandom
 * (advapi32's SystemFunction036), which Wine has. Test scaffolding for
 * scripts/windows-tests only: it is never part of the crate.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* Fills `data` with `length` random bytes; TRUE, as on Windows, or FALSE
 * if the generator failed. RtlGenRandom takes at most ULONG bytes a call. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
