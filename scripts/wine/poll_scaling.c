/*
 * Wine's cost per socket event grows with the polls pending on other
 * sockets. On Windows, a socket event completes the AFD polls waiting on
 * that socket; Wine's server walks its one global list of every pending
 * poll on every event (complete_async_polls in server/sock.c). Tokio
 * (through mio) keeps an AFD poll pending for each socket it owns, so a
 * process with many open sockets slows down on every send and receive.
 *
 * This program times 2,000 round trips of one byte over one loopback
 * connection while N other connections each have a poll pending
 * (a thread blocked in WSAPoll on each, which Wine turns into an AFD
 * poll), for N = 0, 250, 500, 1000. Blocking calls alone do not slow
 * down. Used by scripts/windows-tests; test scaffolding, not the crate.
 */
#include <winsock2.h>
#include <ws2tcpip.h>
#include <stdio.h>
#include <stdlib.h>

static SOCKET listener;
static struct sockaddr_in at;

/* One connected pair on loopback: the client end in *client. */
static SOCKET pair(SOCKET *client)
{
    *client = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(*client, (struct sockaddr *)&at, sizeof at) != 0) {
        printf("connect failed: %d\n", WSAGetLastError());
        exit(1);
    }
    return accept(listener, NULL, NULL);
}

/* Waits in WSAPoll on an idle socket until it is closed. */
static DWORD WINAPI waiter(LPVOID socket)
{
    WSAPOLLFD fd = { (SOCKET)(ULONG_PTR)socket, POLLRDNORM, 0 };
    WSAPoll(&fd, 1, 60000);
    return 0;
}

int main(void)
{
    WSADATA wsa;
    int counts[] = { 0, 250, 500, 1000 };
    WSAStartup(MAKEWORD(2, 2), &wsa);
    listener = socket(AF_INET, SOCK_STREAM, 0);
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, (struct sockaddr *)&at, sizeof at);
    listen(listener, SOMAXCONN);
    int len = sizeof at;
    getsockname(listener, (struct sockaddr *)&at, &len);
    SOCKET client, server = pair(&client);
    int polling = 0;
    for (int c = 0; c < 4; c++) {
        while (polling < counts[c]) {
            SOCKET idle_client, idle = pair(&idle_client);
            CreateThread(NULL, 64 * 1024, waiter, (LPVOID)(ULONG_PTR)idle, 0, NULL);
            polling++;
        }
        Sleep(200); /* every waiter is in WSAPoll */
        LARGE_INTEGER f, t0, t1;
        char byte = 'x';
        QueryPerformanceFrequency(&f);
        QueryPerformanceCounter(&t0);
        for (int i = 0; i < 2000; i++) {
            send(client, &byte, 1, 0);
            recv(server, &byte, 1, 0);
            send(server, &byte, 1, 0);
            recv(client, &byte, 1, 0);
        }
        QueryPerformanceCounter(&t1);
        printf("%4d polls pending elsewhere: %.1f us per round trip\n", polling,
               (t1.QuadPart - t0.QuadPart) * 1e6 / f.QuadPart / 2000);
    }
    return 0;
}
