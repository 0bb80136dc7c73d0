#include <errno.h>
#include <unistd.h>

/* Its own module, not CLinux: including the socket headers in CLinux's
   shim makes that module own declarations (SOCK_STREAM and the rest) that
   targets importing only Glibc then no longer see. Only peerd-lab-link
   imports this one. */

/* Raw Ethernet frames for peerd-lab-link (the lab's delayed link): an
   AF_PACKET socket on one interface, every protocol, promiscuous, with a
   virtio-net header before each frame so that a GSO frame or one whose
   checksum is left to the device (veth passes both on) is sent on as it
   came. */
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sys/socket.h>

/* The bytes of the virtio-net header before each frame. */
static const int peersync_packet_header = (int)sizeof(struct virtio_net_hdr);

/* Opens the socket on interface `name`; -1 with errno on failure. */
static inline int peersync_packet_open(const char *name) {
    unsigned int index = if_nametoindex(name);
    if (index == 0) return -1;
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0) return -1;
    int one = 1;
    struct sockaddr_ll address = {0};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = (int)index;
    struct packet_mreq membership = {0};
    membership.mr_ifindex = (int)index;
    membership.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof one) < 0
        || bind(fd, (struct sockaddr *)&address, sizeof address) < 0
        || setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &membership, sizeof membership) < 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Receives one frame (with its header) into `buffer`; *outgoing is 1 when
   the frame was sent from this interface (PACKET_OUTGOING), not received. */
static inline long peersync_packet_receive(int fd, void *buffer, unsigned long capacity, int *outgoing) {
    struct sockaddr_ll from;
    socklen_t length = sizeof from;
    long count = recvfrom(fd, buffer, capacity, 0, (struct sockaddr *)&from, &length);
    *outgoing = count >= 0 && from.sll_pkttype == PACKET_OUTGOING;
    return count;
}

/* Sends one frame (with its header) out of the socket's interface. */
static inline long peersync_packet_send(int fd, const void *buffer, unsigned long length) {
    return send(fd, buffer, length, 0);
}
