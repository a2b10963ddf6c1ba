/** What every page reads from the shell: who is signed in and the theme. Kept apart from
 * App.tsx, which imports the pages, so a page never imports the shell. */
import { createContext, useContext } from 'react';
import type { WhoAmI } from './api';

/** Who is signed in (undefined while loading). */
export const MeContext = createContext<WhoAmI | undefined>(undefined);
export const useMe = () => useContext(MeContext);

/** The theme, for the shell the router renders. */
export const ThemeContext = createContext<{ dark: boolean; setDark: (d: boolean) => void }>({ dark: false, setDark: () => {} });

/** Whether the dark theme is on. */
export const useDark = () => useContext(ThemeContext).dark;
