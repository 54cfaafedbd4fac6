// Package quorum lets the processes of a job agree on who forms its next
// communicator, as torchft's lighthouse does, using nothing but the job's
// rendezvous store (store.Store). Processes fail and are replaced; after a
// failure the survivors and the replacements each call Join, and all of
// them get back the same Round: a number, a fresh ID and the members'
// handles in the order they joined. Between steps, members call Waiting to
// learn whether newcomers wait to grow in.
//
//	r, err := quorum.Join(ctx, cfg, myHandle, len(last.Members)) // 0 for a newcomer
//
// # When a round closes
//
// A round closes, with everyone who has joined it by then, once at least
// Min have joined and either some joiner passed an expect above 0 and as
// many joiners as the largest such expect passed one (the survivors of the
// last round are all back), or JoinTimeout has passed since the first
// joined. Newcomers (expect 0) that arrive before the survivors are back are
// taken along; a round of newcomers only waits JoinTimeout for more. Anyone
// who joins a round after it closed without them joins the next one.
//
// # Protocol
//
// Keys live under "gocomms/quorum/<Job>/":
//
//	open            counter: the number of the open round (missing = 0)
//	<n>/joined      counter: slots handed out in round n, from 1
//	<n>/h/<slot>    a joiner's entry: its expect in decimal, "\n", its handle
//	<n>/members     the decision: the round ID, "\n", then per member
//	                "<slot> <len(handle)>\n<handle>", in slot order
//
// Join reads open (Add 0) as n, takes a slot with Add(<n>/joined, 1) and
// writes its entry. Handles are written as they are, after the only
// newline the entry has, so any bytes survive.
//
// The joiner with slot 1 is the round's closer. Every Poll it reads the
// joined count and, for slots it has not seen, the entries, all in one
// MultiGet bounded by a grace (20 Poll, or JoinTimeout/20 capped at 1s,
// whichever is more). A slot whose entry is not there by then belongs to a
// joiner that died, or is slow, between counting in and writing: it is no
// member and expects nobody, and while the count stands still the closer
// looks for all such entries again with one Check. When the close rule
// holds, the closer first moves open from n to n+1 with CompareSet, then
// writes the decision with CompareSet set-if-missing; the value that stands
// is the decision, whoever wrote it, and the closer returns it like
// everyone else. Opening the next round first means that once a decision
// can exist, newcomers go to the next round and Waiting counts them there.
// Past its deadline the closer also looks for a decision someone else
// wrote, every JoinTimeout/50 (at least Poll).
//
// Every other joiner waits on <n>/members with Get: four store calls in
// all for a member. If no decision comes within JoinTimeout + JoinTimeout/2
// + 2 graces of joining, the closer may be dead, and the joiner takes over:
// it counts the joiners and reads their entries as the closer would, and
// decides (in the same two steps) if the rule holds, JoinTimeout having
// passed; otherwise it waits as long again and retries. The CompareSets
// make the first decision stand however many try, and anyone who decides
// opens the next round, so a closer that dies at any point does not stall
// the job.
//
// A joiner whose slot the decision does not list joins round n+1 directly,
// and so on, so a late arrival is never lost. The decision lists each
// handle once, at its latest slot; a joiner left out that way moves on too.
// Each joiner returns exactly one round, the one whose decision lists its
// slot, and every member of a round reads the same decision.
//
// Waiting reads open (Add 0) and the open round's joined count (Add 0):
// two store calls. Keys of closed rounds are left in the store.
//
// Errors wrap the store's error and name the job and the round; bad input
// (a nil Store, an empty Job or handle, a negative expect, JoinTimeout or
// Poll) is reported as ErrInvalid before anything is stored.
package quorum
