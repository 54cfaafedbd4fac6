// Command commnode is one gocomms rank per process, and the operator's
// tool around it. This version has one subcommand:
//
//	commnode demo [-ranks N]   run N in-process ranks (default 4), perform
//	                           every collective once on real data, check
//	                           each result against a plain reference, and
//	                           print a table; exit 0 only if all are right
package main
