// The part of libavahi-client that Discovery uses, plus typed wrappers for
// what Swift cannot import well: anonymous-enum constants (they import as
// `Int`), flag values that functions take as plain integers, and nothing
// variadic (`avahi_entry_group_add_service` is variadic: Discovery calls
// `avahi_entry_group_add_service_strlst` instead).
#ifndef PEERSYNC_CAVAHI_SHIM_H
#define PEERSYNC_CAVAHI_SHIM_H

#include <avahi-client/client.h>
#include <avahi-client/lookup.h>
#include <avahi-client/publish.h>
#include <avahi-common/address.h>
#include <avahi-common/alternative.h>
#include <avahi-common/error.h>
#include <avahi-common/malloc.h>
#include <avahi-common/strlst.h>
#include <avahi-common/thread-watch.h>
#include <avahi-common/timeval.h>

/// Every interface (`AVAHI_IF_UNSPEC`), typed as the functions take it.
static inline AvahiIfIndex cavahi_if_unspec(void) { return AVAHI_IF_UNSPEC; }

/// Every protocol (`AVAHI_PROTO_UNSPEC`).
static inline AvahiProtocol cavahi_proto_unspec(void) { return AVAHI_PROTO_UNSPEC; }

/// IPv4 only (`AVAHI_PROTO_INET`).
static inline AvahiProtocol cavahi_proto_inet(void) { return AVAHI_PROTO_INET; }

/// `avahi_client_new` flag: wait in CONNECTING for a daemon that is not there yet.
static inline AvahiClientFlags cavahi_client_no_fail(void) { return AVAHI_CLIENT_NO_FAIL; }

/// No publish flags.
static inline AvahiPublishFlags cavahi_publish_none(void) { return (AvahiPublishFlags)0; }

/// No lookup flags.
static inline AvahiLookupFlags cavahi_lookup_none(void) { return (AvahiLookupFlags)0; }

/// `AVAHI_ERR_COLLISION`.
static inline int cavahi_err_collision(void) { return AVAHI_ERR_COLLISION; }

/// `AVAHI_ADDRESS_STR_MAX`: room for any address in text form.
static inline size_t cavahi_address_str_max(void) { return AVAHI_ADDRESS_STR_MAX; }

#endif
